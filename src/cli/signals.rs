//! SIGINT/SIGTERM: the first stops the pipeline gracefully, the second exits at once.

use tokio_util::sync::CancellationToken;

/// Exit status after a second signal (128 + SIGINT, as shells report it).
const FORCED_EXIT: i32 = 130;

/// Cancels `token` on the first SIGINT or SIGTERM; exits the process on the second (the
/// archive's WAL keeps it consistent).
pub fn install(token: CancellationToken) {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut int), Ok(mut term)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        eprintln!("weir: warning: cannot install signal handlers");
        return;
    };
    tokio::spawn(async move {
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
        }
        eprintln!("weir: stopping: flushing what was read (signal again to exit at once)");
        token.cancel();
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
        }
        eprintln!("weir: exiting at once");
        std::process::exit(FORCED_EXIT);
    });
}
