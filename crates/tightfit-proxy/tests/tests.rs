//! The proxy end to end: a fake upstream on loopback, the proxy in front of it, real
//! conversations through it.

mod faults;
mod sessions;
mod splice;
mod support;
mod wire;
