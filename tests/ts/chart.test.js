// End-to-end: the bundled `chart` tool through `airlock serve`, read by the
// official MCP TypeScript SDK client over stdio and streamable HTTP: the
// JSON summary, an image block holding a PNG of the requested size (its
// IHDR decoded) and, asked for, an embedded SVG resource naming the title
// (by default the PNG alone); bad input is a tool error with no blocks.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { connect, startHttp, writeConfig } from './support.js';

const ARGUMENTS = {
  kind: 'bar',
  title: 'Orders by region',
  series: [
    { name: '2025', values: [12, 30, 7] },
    { name: '2026', values: [15, 28, 11] },
  ],
  labels: ['north', 'south', 'east'],
  width: 480,
  height: 300,
};

/** [width, height] from a PNG's IHDR chunk, after checking the signature. */
function pngSize(png) {
  assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'a PNG signature');
  assert.equal(png.subarray(12, 16).toString('latin1'), 'IHDR');
  return [png.readUInt32BE(16), png.readUInt32BE(20)];
}

for (const transport of ['stdio', 'http']) {
  describe(`chart through the TypeScript SDK over ${transport}`, () => {
    const setup = writeConfig({ extra: '\n[tools.chart]\nside_effect = false\nconcurrency_safe = true\n' });
    let server;
    const open = [];

    before(async () => {
      if (transport === 'http') server = await startHttp(setup);
    });

    after(async () => {
      await Promise.allSettled(open.map((c) => c.close()));
      await server?.stop();
    });

    async function client() {
      const connected = await connect(transport, setup, { server });
      open.push(connected);
      return connected.client;
    }

    test('returns a PNG of the requested size and the SVG beside the summary', async () => {
      const c = await client();
      const result = await c.callTool({ name: 'chart', arguments: { ...ARGUMENTS, svg: true } });
      assert.equal(result.isError, false, JSON.stringify(result).slice(0, 2000));
      const summary = result.structuredContent;
      assert.deepEqual(
        [summary.kind, summary.series, summary.points, summary.width, summary.height],
        ['bar', 2, 6, 480, 300],
      );
      assert.deepEqual(summary.y, { min: 7, max: 30 });
      assert.equal(result.content[0].type, 'text');
      assert.deepEqual(JSON.parse(result.content[0].text), summary);

      const images = result.content.filter((b) => b.type === 'image');
      assert.equal(images.length, 1, JSON.stringify(result.content.map((b) => b.type)));
      assert.equal(images[0].mimeType, 'image/png');
      const png = Buffer.from(images[0].data, 'base64');
      assert.deepEqual(pngSize(png), [480, 300]);
      assert.equal(png.length, summary.png_bytes);

      const resources = result.content.filter((b) => b.type === 'resource');
      assert.equal(resources.length, 1, JSON.stringify(result.content.map((b) => b.type)));
      const svg = resources[0].resource;
      assert.equal(svg.uri, 'airlock:chart/chart.svg');
      assert.equal(svg.mimeType, 'image/svg+xml');
      assert.match(svg.text, /^<svg width="480" height="300"/);
      assert.match(svg.text, /<text[^>]*>\s*Orders by region\s*<\/text>/);
      assert.match(svg.text, /<\/svg>\s*$/);
      assert.equal(summary.svg_bytes, Buffer.byteLength(svg.text));
    });

    test('returns the PNG alone unless the SVG is asked for', async () => {
      const c = await client();
      const result = await c.callTool({ name: 'chart', arguments: ARGUMENTS });
      assert.equal(result.isError, false, JSON.stringify(result).slice(0, 2000));
      assert.deepEqual(result.content.map((b) => b.type), ['text', 'image']);
      assert.equal('svg_bytes' in result.structuredContent, false);
    });

    test('bad input is a tool error naming the member, with no blocks', async () => {
      const c = await client();
      const result = await c.callTool({
        name: 'chart',
        arguments: { kind: 'scatter', series: [{ name: 'a', values: [1, 2] }] },
      });
      assert.equal(result.isError, true);
      assert.deepEqual(result.content.map((b) => b.type), ['text']);
      assert.match(result.content[0].text, /^tool error \(invalid_chart\): series\[0\] gives `values`, but a scatter chart/);
    });
  });
}
