
#[test]
#[ignore]
fn scratch_measure_stats() {
    let console = start(false);
    let approved: Vec<_> = console.waiting().iter().map(|i| lore_core::id::LessonId::parse(i).unwrap()).collect();
    console.engine.approve(&approved, &Attribution::new(None, "ok")).unwrap();
    let n: usize = std::env::var("N").unwrap().parse().unwrap();
    let t = std::time::Instant::now();
    for i in 0..n {
        record(&console.engine, if i % 3 == 0 { Outcome::Failure } else { Outcome::Success }, approved.clone());
    }
    eprintln!("seeded {n} in {:?}", t.elapsed());
    for _ in 0..3 {
        let t = std::time::Instant::now();
        let s = console.get(&console.reviewer, "/v1/stats");
        eprintln!("stats {:?} {}", t.elapsed(), s["executions_per_day"][29]);
        let t = std::time::Instant::now();
        let s = console.get(&console.reviewer, &format!("/v1/lessons/{}/activations", approved[0]));
        eprintln!("activations {:?} {}", t.elapsed(), s["items"].as_array().unwrap().len());
    }
}
