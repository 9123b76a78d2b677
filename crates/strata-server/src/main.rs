//! The `strata-server` binary: runs one cluster node (`strata-server --id 1 --listen ... --dir ...`)
//! until SIGTERM or ctrl-c, and the small `cluster` subcommands an operator needs from a shell
//! (`init`, `status`, `add-learner`, `change-membership`). All logic lives in the library.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use strata_server::node::{self, NodeConfig};
use strata_server::Client;

#[derive(Parser)]
#[command(
    name = "strata-server",
    version,
    about = "A replicated strata node (Raft over HTTP), or a cluster command",
    long_about = "Without a subcommand, runs one node of a strata cluster: it opens (or creates) its \
                  data under --dir and serves the Raft, key-value, cluster and admin HTTP API on \
                  --listen. A new cluster is formed by `strata-server cluster init` sent to one node, \
                  listing every member. SIGTERM or ctrl-c stops the node cleanly.",
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
struct Cli {
    #[command(flatten)]
    serve: ServeArgs,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Args)]
struct ServeArgs {
    /// This node's id in the cluster (unique, not 0 by convention).
    #[arg(long, required = true)]
    id: Option<u64>,
    /// Address to serve on, host:port; peers and clients reach the node at this address.
    #[arg(long, required = true)]
    listen: Option<String>,
    /// Data directory (created if missing).
    #[arg(long, required = true)]
    dir: Option<PathBuf>,
    /// Leader heartbeat interval in milliseconds (etcd's default).
    #[arg(long, default_value_t = 100)]
    heartbeat_ms: u64,
    /// Minimum election timeout in milliseconds; each election waits a random time in
    /// [MIN, 2*MIN) (etcd's default is 1000).
    #[arg(long, default_value_t = 1000)]
    election_timeout_ms: u64,
    /// Take a snapshot after this many log entries since the last one.
    #[arg(long, default_value_t = 10_000)]
    snapshot_logs: u64,
}

#[derive(Subcommand)]
enum Command {
    /// Cluster administration sent to a running node.
    #[command(subcommand)]
    Cluster(ClusterCommand),
    /// The `strata` admin commands against a running node (keys and values as UTF-8 text).
    #[command(subcommand)]
    Admin(AdminCommand),
}

#[derive(Subcommand)]
enum AdminCommand {
    /// The node's database statistics (as `strata stats`).
    Stats {
        #[arg(long)]
        endpoint: String,
    },
    /// A property of the node's database (as `strata get_property`).
    GetProperty {
        #[arg(long)]
        endpoint: String,
        name: String,
    },
    /// Compacts the node's whole database (as `strata compact`), on that node only.
    Compact {
        #[arg(long)]
        endpoint: String,
    },
    /// Reads a key, linearizably (from the leader).
    Get {
        #[arg(long)]
        endpoint: String,
        key: String,
    },
    /// Writes a key through the cluster.
    Put {
        #[arg(long)]
        endpoint: String,
        key: String,
        value: String,
    },
    /// Deletes a key through the cluster.
    Delete {
        #[arg(long)]
        endpoint: String,
        key: String,
    },
    /// Prints `key ==> value` for keys in [--from, --to), linearizably.
    Scan {
        #[arg(long)]
        endpoint: String,
        #[arg(long, default_value = "")]
        from: String,
        #[arg(long)]
        to: Option<String>,
        #[arg(long, default_value_t = 100)]
        limit: u64,
    },
}

#[derive(Subcommand)]
enum ClusterCommand {
    /// Forms a new cluster with every --member as a voter (send to one of them, once).
    Init {
        /// The node to send the request to, host:port.
        #[arg(long)]
        endpoint: String,
        /// A member as ID=HOST:PORT; repeat for each.
        #[arg(long = "member", required = true, value_parser = parse_member)]
        members: Vec<(u64, String)>,
    },
    /// Prints a node's view of the cluster as JSON.
    Status {
        #[arg(long)]
        endpoint: String,
    },
    /// Adds a learner (non-voting member) and waits until it has caught up.
    AddLearner {
        /// Any member; the request follows the leader.
        #[arg(long)]
        endpoint: String,
        #[arg(long)]
        id: u64,
        #[arg(long)]
        addr: String,
    },
    /// Makes exactly these nodes the voters (comma-separated ids).
    ChangeMembership {
        #[arg(long)]
        endpoint: String,
        #[arg(long, value_delimiter = ',', required = true)]
        voters: Vec<u64>,
    },
}

fn parse_member(s: &str) -> Result<(u64, String), String> {
    let (id, addr) = s.split_once('=').ok_or_else(|| format!("expected ID=HOST:PORT, got {s:?}"))?;
    let id = id.parse::<u64>().map_err(|e| format!("bad id {id:?}: {e}"))?;
    Ok((id, addr.to_string()))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("strata-server: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Some(Command::Cluster(c)) => cluster(c).await,
            Some(Command::Admin(c)) => admin(c).await,
            None => serve(cli.serve).await,
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("strata-server: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(args: ServeArgs) -> Result<(), String> {
    let (Some(id), Some(listen), Some(dir)) = (args.id, args.listen, args.dir) else {
        return Err("--id, --listen and --dir are required".into());
    };
    let mut config = NodeConfig::new(id, listen, dir);
    config.heartbeat_ms = args.heartbeat_ms;
    config.election_timeout_ms = args.election_timeout_ms;
    config.snapshot_logs = args.snapshot_logs;
    let running = node::start(config).await.map_err(|e| e.to_string())?;
    eprintln!("strata-server: node {id} serving on {}", running.addr);
    wait_for_stop().await;
    eprintln!("strata-server: node {id} stopping");
    running.shutdown().await;
    Ok(())
}

/// Returns on ctrl-c or SIGTERM.
async fn wait_for_stop() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

async fn cluster(command: ClusterCommand) -> Result<(), String> {
    match command {
        ClusterCommand::Init { endpoint, members } => {
            let members: BTreeMap<u64, String> = members.into_iter().collect();
            Client::new(vec![endpoint.clone()]).init(&endpoint, members).await.map_err(|e| e.to_string())?;
            println!("initialized");
        }
        ClusterCommand::Status { endpoint } => {
            let status =
                Client::new(vec![endpoint.clone()]).status(&endpoint).await.map_err(|e| e.to_string())?;
            println!("{}", serde_json::to_string_pretty(&status).map_err(|e| e.to_string())?);
        }
        ClusterCommand::AddLearner { endpoint, id, addr } => {
            Client::new(vec![endpoint]).add_learner(id, &addr).await.map_err(|e| e.to_string())?;
            println!("learner {id} added");
        }
        ClusterCommand::ChangeMembership { endpoint, voters } => {
            let voters: BTreeSet<u64> = voters.into_iter().collect();
            Client::new(vec![endpoint]).change_membership(voters).await.map_err(|e| e.to_string())?;
            println!("membership changed");
        }
    }
    Ok(())
}

async fn admin(command: AdminCommand) -> Result<(), String> {
    let text = |e: strata_server::ClientError| e.to_string();
    match command {
        AdminCommand::Stats { endpoint } => {
            print!("{}", Client::new(vec![endpoint.clone()]).stats(&endpoint).await.map_err(text)?);
        }
        AdminCommand::GetProperty { endpoint, name } => {
            let value = Client::new(vec![endpoint.clone()]).property(&endpoint, &name).await.map_err(text)?;
            println!("{}", value.ok_or_else(|| format!("no property {name}"))?.trim_end());
        }
        AdminCommand::Compact { endpoint } => {
            Client::new(vec![endpoint.clone()]).compact(&endpoint).await.map_err(text)?;
            println!("compacted");
        }
        AdminCommand::Get { endpoint, key } => {
            let value = Client::new(vec![endpoint]).get(key.as_bytes()).await.map_err(text)?;
            let value = value.ok_or_else(|| format!("{key}: not found"))?;
            println!("{}", String::from_utf8_lossy(&value));
        }
        AdminCommand::Put { endpoint, key, value } => {
            Client::new(vec![endpoint]).put(key.as_bytes(), value.as_bytes()).await.map_err(text)?;
            println!("OK");
        }
        AdminCommand::Delete { endpoint, key } => {
            Client::new(vec![endpoint]).delete(key.as_bytes()).await.map_err(text)?;
            println!("OK");
        }
        AdminCommand::Scan { endpoint, from, to, limit } => {
            let client = Client::new(vec![endpoint]);
            let limit = usize::try_from(limit).unwrap_or(usize::MAX);
            let pairs =
                client.scan(from.as_bytes(), to.as_deref().map(str::as_bytes), limit).await.map_err(text)?;
            for (k, v) in pairs {
                println!("{} ==> {}", String::from_utf8_lossy(&k), String::from_utf8_lossy(&v));
            }
        }
    }
    Ok(())
}
