//! UDP sockets with kernel receive timestamps (SO_TIMESTAMPNS / SO_TIMESTAMPING) for the
//! net probe.
