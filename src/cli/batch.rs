//! `event-audit batch`: migration batches as first-class objects. `register` stores a manifest
//! under a name unique per supplier (the same name with the same list again is a no-op, with
//! another list an error); `close` closes a batch (the daemon no longer reconciles it; it also
//! closes by itself once settled); `list` shows every batch with its latest run.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use super::args::{ConfigArg, DatabaseArgs};
use super::output::find_batch;
use crate::db::Db;
use crate::reconcile::batch::{batch_scope, name_problem, Registered};
use crate::reconcile::manifest::Manifest;
use crate::reconcile::model::Tolerance;
use crate::reconcile::store::ReconcileStore;

#[derive(clap::Subcommand, Debug, Clone)]
pub(crate) enum BatchAction {
    /// Store a batch's manifest under a name (unique per supplier).
    Register(RegisterArgs),
    /// Close a batch: the daemon stops reconciling it (its runs stay).
    Close(CloseArgs),
    /// Every batch, open and closed, with its latest run.
    List(ListArgs),
}

/// Options of `event-audit batch register`.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct RegisterArgs {
    #[command(flatten)]
    pub(crate) config: ConfigArg,
    #[command(flatten)]
    pub(crate) database: DatabaseArgs,
    /// The import supplier code of the batch.
    #[arg(long)]
    pub(crate) supplier: String,
    /// The batch's name (unique per supplier).
    #[arg(long)]
    pub(crate) name: String,
    /// The manifest: one external account number a line, `order:ID` lines for the batch's
    /// external order ids (`simulate-platform --manifest` writes one).
    #[arg(long)]
    pub(crate) accounts: PathBuf,
    /// A verdict that counts as OK in every run of the batch: `VERDICT` or `VERDICT=N`.
    /// Repeatable.
    #[arg(long = "tolerate")]
    pub(crate) tolerances: Vec<Tolerance>,
}

/// Options of `event-audit batch close`.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct CloseArgs {
    #[command(flatten)]
    pub(crate) config: ConfigArg,
    #[command(flatten)]
    pub(crate) database: DatabaseArgs,
    /// The batch's supplier, when several have a batch of that name.
    #[arg(long)]
    pub(crate) supplier: Option<String>,
    #[arg(long)]
    pub(crate) name: String,
}

/// Options of `event-audit batch list`.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct ListArgs {
    #[command(flatten)]
    pub(crate) config: ConfigArg,
    #[command(flatten)]
    pub(crate) database: DatabaseArgs,
    /// JSON instead of a table.
    #[arg(long)]
    pub(crate) json: bool,
}

pub(super) fn run(action: BatchAction) -> anyhow::Result<ExitCode> {
    match action {
        BatchAction::Register(a) => register(a),
        BatchAction::Close(a) => close(a),
        BatchAction::List(a) => list(a),
    }
}

fn register(args: RegisterArgs) -> anyhow::Result<ExitCode> {
    let settings = args.config.load()?;
    if args.supplier.trim().is_empty() {
        anyhow::bail!("--supplier must not be empty");
    }
    if let Some(why) = name_problem(&args.name) {
        anyhow::bail!("--name `{}`: {why}", args.name);
    }
    let text = std::fs::read_to_string(&args.accounts)
        .with_context(|| format!("reading the manifest {}", args.accounts.display()))?;
    let file = args
        .accounts
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let manifest = Manifest::parse(&file, &text);
    if manifest.accounts.is_empty() {
        anyhow::bail!(
            "the manifest {} lists no account (one external account number a line)",
            args.accounts.display()
        );
    }
    if let Some(line) = manifest
        .accounts
        .iter()
        .position(|a| a.starts_with(crate::reconcile::batch::TOMBSTONE_PREFIX))
    {
        anyhow::bail!(
            "the manifest {} lists an account number starting with `{}` (account {} of the list): that prefix marks an erased member; remove the line",
            args.accounts.display(),
            crate::reconcile::batch::TOMBSTONE_PREFIX,
            line + 1
        );
    }
    let tolerances: Vec<String> = args
        .tolerances
        .iter()
        .map(|t| match t.max {
            Some(n) => format!("{}={n}", t.verdict),
            None => t.verdict.to_string(),
        })
        .collect();
    super::runtime()?.block_on(async {
        let store = ReconcileStore::new(Db::open_existing(&settings.database, 1).await?);
        match store
            .register_batch(&args.supplier, &args.name, &manifest, &tolerances)
            .await?
        {
            Registered::Created(b) => eprintln!(
                "registered batch {} (id {}): {} accounts, {} orders",
                b.label(),
                b.id,
                b.accounts,
                b.orders
            ),
            Registered::Existing(b) => eprintln!(
                "batch {} (id {}) is already registered with this list: nothing to do",
                b.label(),
                b.id
            ),
            Registered::Conflict(b) => anyhow::bail!(
                "batch {} is already registered with another list ({} accounts, {} orders, \
                 tolerated {}, from {}, at {}); this manifest has {} accounts and {} orders; \
                 register it under another name",
                b.label(),
                b.accounts,
                b.orders,
                if b.tolerances.is_empty() {
                    "nothing".to_owned()
                } else {
                    b.tolerances.join(", ")
                },
                b.source.as_deref().unwrap_or("?"),
                b.registered_at.to_rfc3339(),
                manifest.accounts.len(),
                manifest.orders.len()
            ),
        }
        Ok(ExitCode::SUCCESS)
    })
}

fn close(args: CloseArgs) -> anyhow::Result<ExitCode> {
    let settings = args.config.load()?;
    super::runtime()?.block_on(async {
        let store = ReconcileStore::new(Db::open_existing(&settings.database, 1).await?);
        let b = find_batch(&store, args.supplier.as_deref(), &args.name).await?;
        if store.close_batch(b.id, "command", None).await? {
            eprintln!("closed batch {} (id {})", b.label(), b.id);
        } else {
            eprintln!("batch {} (id {}) was closed already", b.label(), b.id);
        }
        Ok(ExitCode::SUCCESS)
    })
}

fn list(args: ListArgs) -> anyhow::Result<ExitCode> {
    let settings = args.config.load()?;
    super::runtime()?.block_on(async {
        let store = ReconcileStore::new(Db::open_existing(&settings.database, 1).await?);
        let mut out = Vec::new();
        for b in store.batches(None).await? {
            let latest = store.reconcile_runs(1, Some(&batch_scope(b.id))).await?;
            out.push((b, latest.into_iter().next()));
        }
        if args.json {
            let v: Vec<serde_json::Value> = out
                .iter()
                .map(|(b, r)| serde_json::json!({"batch": b, "latest_run": r}))
                .collect();
            println!(
                "{}",
                serde_json::to_string(&serde_json::json!({"batches": v}))?
            );
            return Ok(ExitCode::SUCCESS);
        }
        println!(
            "{:<6} {:<12} {:<24} {:>8} {:>7}  {:<18} LATEST RUN",
            "ID", "SUPPLIER", "NAME", "ACCOUNTS", "ORDERS", "STATE"
        );
        for (b, r) in &out {
            let state = match &b.closed {
                None => "open".to_owned(),
                Some(c) => format!("closed ({})", c.reason),
            };
            let run = r.as_ref().map_or_else(
                || "none".to_owned(),
                |r| {
                    format!(
                        "{} {} at {}",
                        r.run_id,
                        r.outcome.as_str(),
                        r.finished_at
                            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
                    )
                },
            );
            println!(
                "{:<6} {:<12} {:<24} {:>8} {:>7}  {:<18} {run}",
                b.id, b.supplier, b.name, b.accounts, b.orders, state
            );
        }
        Ok(ExitCode::SUCCESS)
    })
}
