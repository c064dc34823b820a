use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use futures::future::join_all;

use super::*;

/// Nine calls started together, as a fan-out to nine drives starts them.
async fn nine<T, F>(work: impl Fn(usize) -> F) -> Vec<Result<T, DriveError>>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, DriveError> + Send + 'static,
{
    join_all((0..9).map(|i| run(work(i)))).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fan_out_crosses_to_one_blocking_thread() {
    let threads = together(nine(|_| || Ok(std::thread::current().id()))).await;
    let first = threads[0].as_ref().unwrap();
    assert!(threads.iter().all(|t| t.as_ref().unwrap() == first));
    assert_ne!(
        *first,
        std::thread::current().id(),
        "off the runtime's thread"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_held_up_holds_none_of_the_others() {
    let release = Arc::new(AtomicBool::new(false));
    let held = release.clone();
    let started = Instant::now();
    let calls = together(async move {
        let answers = join_all((0..9).map(|i| {
            let held = held.clone();
            async move {
                let stuck = held.clone();
                let answer = run(move || {
                    // The first job stands for a drive that stopped answering.
                    while i == 0 && !stuck.load(Ordering::SeqCst) {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    Ok(i)
                })
                .await;
                if i == 8 {
                    held.store(true, Ordering::SeqCst);
                }
                (answer, started.elapsed())
            }
        }));
        answers.await
    });
    // Without help the held-up job holds the others, and the one that would release it.
    let calls = tokio::time::timeout(Duration::from_secs(5), calls).await;
    release.store(true, Ordering::SeqCst);
    let calls = calls.expect("the other jobs answered");
    for (i, (answer, took)) in calls.iter().enumerate().skip(1) {
        assert_eq!(*answer.as_ref().unwrap(), i);
        assert!(*took < Duration::from_millis(500), "call {i} took {took:?}");
    }
    assert_eq!(*calls[0].0.as_ref().unwrap(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_that_panics_fails_alone() {
    let answers = together(nine(|i| {
        move || match i {
            4 => panic!("a drive call that panics"),
            _ => Ok(i),
        }
    }))
    .await;
    for (i, answer) in answers.iter().enumerate() {
        match i {
            4 => assert!(matches!(answer, Err(DriveError::Io(_))), "{answer:?}"),
            _ => assert_eq!(*answer.as_ref().unwrap(), i),
        }
    }
}

#[tokio::test]
async fn outside_a_scope_each_job_runs_on_its_own() {
    let answers = nine(|i| move || Ok(i * 2)).await;
    let answers: Vec<usize> = answers.into_iter().map(Result::unwrap).collect();
    assert_eq!(answers, (0..9).map(|i| i * 2).collect::<Vec<_>>());
}
