//! The meter's CPU allowance and its refusal, the header check, and the
//! private directories of compilations.

use super::*;

#[test]
fn the_cpu_allowed_grows_with_the_size_up_to_the_timeout() {
    let meter = |timeout_secs, secs_per_mib| Meter {
        exe: None,
        timeout_secs,
        secs_per_mib,
        memory_mib: 4096,
        configured_memory_mib: 4096,
        budget_mib: 8192,
        share_percent: 50,
        wasm_stack_bytes: 1 << 20,
    };
    let default = meter(300, 4);
    assert_eq!(default.cpu_secs(0), 5);
    assert_eq!(default.cpu_secs(210_000), 6, "a 210 KB component");
    assert_eq!(default.cpu_secs(21_353_022), 87, "run_python");
    assert_eq!(default.cpu_secs(256 << 20), 300, "capped at compile_timeout_secs");
    assert_eq!(meter(1, 4).cpu_secs(210_000), 1);
    assert_eq!(meter(300, 1).cpu_secs(1 << 20), 6);
    assert_eq!(default.wall_deadline(210_000), Duration::from_secs(3 * 6 + 10));
    let by_size = default.cpu_refusal(210_000, Duration::from_millis(6_010));
    assert!(by_size.contains("more than the 6 s of CPU (5 s + `[engine] compile_secs_per_mib = 4` s per MiB of its 0.20 MiB, at most `[engine] compile_timeout_secs = 300`)"), "{by_size}");
    assert!(
        by_size.contains("stopped after 6.0 s") && by_size.contains("a higher compile_secs_per_mib, at most 600"),
        "{by_size}"
    );
    let capped = meter(1, 4).cpu_refusal(210_000, Duration::from_secs(1));
    assert!(
        capped.contains("`[engine] compile_timeout_secs = 1` seconds of CPU (its size, 0.20 MiB, would allow 6 s"),
        "{capped}"
    );
    assert!(capped.contains("a higher compile_timeout_secs, at most 3600"), "{capped}");
}

#[test]
fn header_check_names_what_it_is() {
    assert!(check_header(&COMPONENT_HEADER).is_ok());
    assert_eq!(check_header(&MODULE_HEADER), Err(NotAComponent::CoreModule));
    assert!(check_header(&MODULE_HEADER).unwrap_err().to_string().contains("core WebAssembly module"));
    assert_eq!(check_header(b"(component)"), Err(NotAComponent::NotWasm));
    assert!(check_header(b"").unwrap_err().to_string().contains("not a WebAssembly binary"));
}

#[test]
fn a_private_directory_steps_over_names_left_behind() {
    // A process id no process has: the names ahead of the counter are
    // taken, as a killed process with a reused id would leave them.
    let pid = u32::MAX;
    let next = NEXT_TEMP.load(Ordering::Relaxed);
    let taken: Vec<PathBuf> =
        (next..next + 8).map(|n| std::env::temp_dir().join(format!("airlock-compile-{pid}-{n}"))).collect();
    for dir in &taken {
        std::fs::create_dir_all(dir).unwrap();
    }
    let made = private_dir(pid);
    for dir in &taken {
        let _ = std::fs::remove_dir(dir);
    }
    let made = made.unwrap_or_else(|_| panic!("no directory was made"));
    assert!(!taken.contains(&made), "{} was taken", made.display());
    assert!(made.is_dir());
    std::fs::remove_dir(&made).unwrap();
}

#[test]
fn a_compilation_reserves_at_most_the_compilations_share_of_the_budget() {
    let settings = EngineSettings::default();
    let mib = |budget_mib: u64| Meter::new(&settings, budget_mib << 20).memory_mib;
    // A 4 GiB container's 3072 MiB: half of it, not the whole.
    assert_eq!(mib(3072), 1536);
    let meter = Meter::new(&settings, 3072 << 20);
    assert!(meter.memory_limit().contains("`[engine] memory_share_percent` = 50 % of `memory_budget_mib` = 3072 MiB"));
    assert!(meter.memory_refusal().contains("raise memory_budget_mib or memory_share_percent"));
    // A large budget: compile_memory_mib.
    assert_eq!(mib(16 << 10), 4096);
    // A small one: never below the least compile_memory_mib accepted, nor
    // above the whole budget.
    assert_eq!(mib(400), MIN_COMPILE_MEMORY_MIB);
    assert_eq!(mib(200), 200);
    assert!(Meter::new(&settings, 200 << 20).memory_limit().contains("the whole host memory budget"));
}
