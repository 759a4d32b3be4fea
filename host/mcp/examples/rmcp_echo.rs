//! The floor for a Rust MCP server on stdio, for `make bench`: a plain
//! rmcp server with one `echo` tool that returns its `text` argument, on
//! the same `stdio_pipes()` as `airlock serve --stdio`, with no sandbox,
//! no validation, no policy and no audit. What Airlock's stdio round trip
//! costs over this one is the price of the trust boundary.
//!
//! With `--http ADDR` it serves the same tool over rmcp's streamable HTTP
//! service (sessions kept in memory, as `airlock serve --http` keeps them),
//! behind a plain axum router: the floor for a Rust MCP server on HTTP. It
//! prints `listening on http://ADDR/mcp` once it accepts connections.
//!
//! ```sh
//! cargo run --release -p airlock-mcp --example rmcp_echo
//! cargo run --release -p airlock-mcp --example rmcp_echo -- --http 127.0.0.1:0
//! ```

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};
use std::sync::Arc;

/// One tool, `echo`.
#[derive(Clone)]
struct Echo {
    tool: Tool,
}

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![self.tool.clone()]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != "echo" {
            return Err(ErrorData::invalid_params(format!("no tool named {:?}", request.name), None));
        }
        let text = request.arguments.as_ref().and_then(|arguments| arguments.get("text")).and_then(Value::as_str);
        let text = text.ok_or_else(|| ErrorData::invalid_params("`text` (a string) is required", None))?;
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

#[tokio::main(flavor = "multi_thread")]
async fn main() -> anyhow::Result<()> {
    let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]});
    let Value::Object(schema) = schema else { anyhow::bail!("the schema is an object") };
    let tool = Tool::new("echo", "Returns its text.", Arc::new(schema));
    let args: Vec<String> = std::env::args().collect();
    if let Some(addr) = args.iter().position(|a| a == "--http").and_then(|i| args.get(i + 1)) {
        return serve_http(Echo { tool }, addr).await;
    }
    let running = Echo { tool }.serve(rmcp::transport::stdio_pipes()).await?;
    running.waiting().await?;
    Ok(())
}

/// The same server over rmcp's streamable HTTP at `/mcp`.
async fn serve_http(echo: Echo, addr: &str) -> anyhow::Result<()> {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
    let service = StreamableHttpService::new(
        move || Ok(echo.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let app = axum::Router::new().route_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    // As `airlock serve --http` does: a response's second write would wait
    // for the delayed ACK of its first.
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        let _ = tcp.set_nodelay(true);
    });
    println!("listening on http://{local}/mcp");
    axum::serve(listener, app).await?;
    Ok(())
}
