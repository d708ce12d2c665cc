//! The wake-up mechanisms of the ipc and switch probes: eventfd, pipe, futex, POSIX
//! message queue, signal, POSIX semaphore.
