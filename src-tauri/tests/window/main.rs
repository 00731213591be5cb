//! The desktop app in a real window: the app's program as built, on an Xvfb display, driven
//! through tauri-driver and WebKitGTK's own WebKitWebDriver (Debian's `webkit2gtk-driver`),
//! as a user would: it starts, its server answers on localhost, a PDF chosen in the window
//! is rotated and saved through the system's save dialog (answered with xdotool), start at
//! login is switched on and off; an agent's call above the approval threshold raises a
//! native notification (read back from a real notification server, dunst) and the
//! window's dialog, and once approved is paid to the hosted sandbox; closing the window
//! keeps the server serving, a second launch brings the window back, and the tray menu
//! (clicked over D-Bus, as a panel does) opens it and quits; a screenshot of each screen
//! is kept in `src-tauri/test-artifacts/`.
//!
//! And the app killed (SIGKILL) in the middle of an agent's paid call, once the hosted
//! sandbox has settled it but before the answer reached the app: started again, its
//! server settles the payment its ledger left open, from the chain.

mod crash_settles;
mod saves_a_rotated_pdf;
mod support;
