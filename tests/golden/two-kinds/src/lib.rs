//! The guestbook operator: API types, their controllers, and what the manager serves.

pub mod api;
pub mod controller;
pub mod health;
pub mod leader;
pub mod metrics;
pub mod server;
#[cfg(test)]
pub mod testing;
pub mod webhook;
