//! `bench/run.sh` measures the server it starts, never whatever already listens on its port.

use std::net::TcpListener;
use std::process::Command;

#[test]
fn the_benchmark_script_refuses_a_port_in_use_and_sends_it_nothing() {
    let squatter = TcpListener::bind("127.0.0.1:0").unwrap();
    squatter.set_nonblocking(true).unwrap();
    let port = squatter.local_addr().unwrap().port();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/bench/run.sh");
    // A binary that would fail at once: the script must stop before it is ever run.
    let out = Command::new("bash")
        .args([script, "/bin/false", "10", "1s"])
        .env("PORT", port.to_string())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("port {port} is in use")),
        "{stderr}"
    );
    // The probe connects and leaves; no benchmark request followed it.
    let mut requests = 0;
    while let Ok((mut conn, _)) = squatter.accept() {
        conn.set_nonblocking(true).unwrap();
        let mut buf = [0u8; 64];
        if std::io::Read::read(&mut conn, &mut buf).is_ok_and(|n| n > 0) {
            requests += 1;
        }
    }
    assert_eq!(
        requests, 0,
        "the script sent requests to a server it did not start"
    );
}
