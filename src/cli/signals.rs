//! SIGINT/SIGTERM: the first stops the pipeline gracefully, the second exits at once.

use tokio_util::sync::CancellationToken;

/// Exit status after a second signal (128 + SIGINT, as shells report it).
const FORCED_EXIT: i32 = 130;

/// Installs the handlers at once (before any work, so that an early signal is not fatal) and
/// returns the token the first SIGINT or SIGTERM cancels; the second exits the process (the
/// archive's WAL keeps it consistent).
pub fn install() -> CancellationToken {
    let token = CancellationToken::new();
    let ret = token.clone();
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut int), Ok(mut term)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        say!("weir: warning: cannot install signal handlers");
        return ret;
    };
    tokio::spawn(async move {
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
        }
        say!("weir: stopping: flushing what was read (signal again to exit at once)");
        token.cancel();
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
        }
        say!("weir: exiting at once");
        std::process::exit(FORCED_EXIT);
    });
    ret
}

/// Forwards a cancellation of `from` (the signal token) to `to` (a pipeline's token).
pub fn forward(from: CancellationToken, to: CancellationToken) {
    tokio::spawn(async move {
        from.cancelled().await;
        to.cancel();
    });
}
