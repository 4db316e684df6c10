//! The witnessed log's option groups: the daemon's signer (`run`) and the readers' (`verify`,
//! `prove`), each a list of `witness.*` settings paths.

options_group! {
    /// `run`: signing and publishing checkpoints.
    pub struct SignerArgs = [
        "witness.signing_key_file",
        "witness.ml_dsa_signing_key_file",
        "witness.checkpoint_interval",
        "witness.no_account_index",
        "witness.signer_state",
        "witness.checkpoint_replicas",
        "witness.tiles_dir",
        "witness.tiles_url",
        "witness.restore_from",
        PolicyArg,
        PlaceArgs,
        WitnessTlsArgs,
    ];
}

options_group! {
    /// TLS of the witnesses and of a log's tiles read over HTTPS (`mirror --log-url`,
    /// `--restore-from`, `restore-leaves --from`).
    pub struct WitnessTlsArgs = [
        "witness.tls_ca_file",
        "witness.tls_cert_file",
        "witness.tls_key_file",
    ];
}

options_group! {
    /// The witnesses whose cosignatures a checkpoint needs.
    pub struct PolicyArg = [
        "witness.witness_policy",
    ];
}

options_group! {
    /// Where checkpoints are witnessed, and the log's name in them.
    pub struct PlaceArgs = [
        "witness.checkpoint_stream",
        "witness.checkpoint_dir",
        "witness.origin",
    ];
}

options_group! {
    /// `verify`: checking the log against the witnessed checkpoints.
    pub struct ReaderArgs = [
        "witness.public_key",
        "witness.full",
        "witness.incremental",
        "witness.acknowledge_break",
        "witness.state_file",
        "witness.no_state",
        PolicyArg,
        PlaceArgs,
    ];
}
