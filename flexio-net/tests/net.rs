//! The network tests, one module per file beside this one, in one test
//! binary: built and linked once instead of once a file, and run as one
//! pool of test threads. Seven stay binaries of their own: two change the
//! process's open-files limit (`net_serve_fds`, `net_serve_load`), two
//! count this process's threads or listening sockets (`net_serve_tls`,
//! `net_tls_client`), which other tests' servers would change, and three
//! time rates, pauses and the spread over workers (`net_pace`,
//! `net_schedule`, `net_serve_balance`), which other tests' work beside
//! them would disturb.

mod common;

mod net_get;
mod net_get_head_without_length;
mod net_get_tree_dir_mtimes;
mod net_hostile;
mod net_hostile_framing;
mod net_listing;
mod net_put_tree_unchanged;
mod net_relay_hostile;
mod net_relay_idle;
mod net_serve;
mod net_serve_access_log;
mod net_serve_cache;
mod net_serve_chunked;
mod net_serve_interop;
mod net_serve_lifecycle;
mod net_serve_offload;
mod net_serve_preconditions;
mod net_serve_priority;
mod net_serve_reuse;
mod net_serve_symlinks;
mod net_serve_tls_chain;
mod net_serve_turns;
mod net_serve_upload_limits;
mod net_serve_via;
mod net_tls_ca_self_signed;
mod net_tls_verify;
