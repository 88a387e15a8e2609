use std::process::ExitCode;

use webevo::memory::Counted;
#[cfg(feature = "mimalloc")]
use webevo::memory::KeepFreed;

/// See `memory::tune_allocator` and `memory::KeepFreed`; counted for
/// `WEBEVO_MEMORY_TRACE`.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: Counted<KeepFreed> = Counted(KeepFreed(mimalloc::MiMalloc));

#[cfg(not(feature = "mimalloc"))]
#[global_allocator]
static ALLOCATOR: Counted<std::alloc::System> = Counted(std::alloc::System);

fn main() -> ExitCode {
    webevo::memory::count_heap();
    webevo::memory::tune_allocator();
    webevo::freed_hold::enable();
    match webevo::cli::run(std::env::args_os()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            if let Some(clap_err) = err.downcast_ref::<clap::Error>() {
                // --help and --version are errors to clap but successes to us.
                let _ = clap_err.print();
                return ExitCode::from(if clap_err.use_stderr() { 2 } else { 0 });
            }
            if err.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
            }) {
                return ExitCode::SUCCESS;
            }
            eprintln!("webevo: error: {err:#}");
            // Worker errors arrive as text, so the full disk is recognized by its message.
            let full = err.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|e| e.kind() == std::io::ErrorKind::StorageFull)
                    || c.to_string().contains("No space left on device")
            });
            if full {
                eprintln!(
                    "webevo: the disk is full: nothing of this run was committed and the last commit is intact; free some space and run the same command again"
                );
            }
            ExitCode::from(webevo::error::exit_code(&err))
        }
    }
}
