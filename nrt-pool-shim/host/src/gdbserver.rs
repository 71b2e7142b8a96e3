//! gdbserver (Debian's package) attached to a host core's process for a debug launch
//! (`--gdb`, D83).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use nrt_pool_engine::deadline::Deadline;

/// Starts `gdbserver --once --attach` on a free port of 127.0.0.1 for process `pid`:
/// the server and the port it listens on, once it says so.
pub fn attach(pid: i32, deadline: &Deadline) -> std::io::Result<(Child, u16)> {
    let mut child = Command::new("gdbserver")
        .args(["--once", "--attach", "127.0.0.1:0"])
        .arg(pid.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!("cannot start gdbserver ({e}): install Debian's gdbserver package (make tools does)"),
            )
        })?;
    let err = child.stderr.take().expect("piped above");
    // Its words until it listens ("Listening on port N"), read on a thread so that a
    // server that never says so cannot hang the launch past its deadline.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut said = String::new();
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            if let Some(p) = line.strip_prefix("Listening on port ") {
                let _sent = tx.send(p.trim().parse::<u16>().map_err(|_| said.clone()));
                return;
            }
            said.push_str(&line);
            said.push('\n');
        }
        let _sent = tx.send(Err(said));
    });
    let wait = deadline
        .slice(std::time::Duration::from_secs(20))
        .max(std::time::Duration::from_millis(1));
    match rx.recv_timeout(wait) {
        Ok(Ok(port)) => Ok((child, port)),
        Ok(Err(said)) => {
            stop(&mut child);
            Err(std::io::Error::other(format!(
                "gdbserver could not attach to the core's process {pid}: {}",
                said.trim()
            )))
        }
        Err(_) => {
            stop(&mut child);
            Err(std::io::Error::other("gdbserver did not start listening"))
        }
    }
}

/// Ends the server (it detaches from the core) and reaps it.
pub fn stop(child: &mut Child) {
    if matches!(child.try_wait(), Ok(None)) {
        let _killed = child.kill();
    }
    let _reaped = child.wait();
}
