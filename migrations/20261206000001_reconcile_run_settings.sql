-- Each reconciliation run's settings: what decides its verdicts and outcome besides the data on
-- both sides (the event grace, the registration grace when registrations are followed, whether
-- pending accounts were asked about, whether registrations were followed, the tolerances, the
-- window of outcome events: fixed bounds, or the length of a moving one). Kept apart from
-- `parameters` (which also holds the REST client's configuration and a moving window's start,
-- different at every run) so that two runs of one scope compare setting by setting: a run from
-- the command line with other settings than the daemon's is shown as such beside the accounts
-- that changed, instead of reading as the accounts changing back and forth. Written with the run
-- (INSERT only). NULL for runs stored before this column: their settings were not recorded.
ALTER TABLE audit.reconcile_runs ADD COLUMN settings jsonb;
COMMENT ON COLUMN audit.reconcile_runs.settings IS
    'the settings that decide the run''s verdicts and outcome (grace_secs, registration_grace_secs, check_pending, meter_points, tolerances, since, until, window_secs); NULL: not recorded (run stored before 20261206000001)';
