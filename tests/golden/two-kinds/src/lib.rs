//! The guestbook operator: API types, their controllers, and the manager's probes.

pub mod api;
pub mod controller;
pub mod health;
