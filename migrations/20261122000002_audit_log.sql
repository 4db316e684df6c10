-- The append-only audit log: one row per JetStream message, whatever its verdict.
-- Key text columns use the "C" collation: identifiers compare bytewise, and their indexes are
-- cheaper to maintain than with a linguistic collation.
CREATE SCHEMA IF NOT EXISTS audit;

CREATE TABLE audit.events (
    stream          text COLLATE "C" NOT NULL,
    stream_seq      bigint      NOT NULL,
    published_at    timestamptz NOT NULL,   -- JetStream's time for the message; partition key
    received_at     timestamptz NOT NULL,   -- when event-audit recorded it
    subject         text        NOT NULL,
    delivery_count  integer     NOT NULL,   -- deliveries when it was recorded
    headers         jsonb,                  -- NATS headers that matter (Event-Type, Nats-Msg-Id, ...)
    envelope        text,                   -- cloudevents | eventbridge | native | bare
    event_id        text COLLATE "C",      -- envelope id
    event_type      text COLLATE "C",
    event_version   text,
    status          text        NOT NULL CHECK (status IN ('decoded', 'invalid', 'unknown_version', 'unknown_type', 'malformed')),
    errors          jsonb,                  -- [{path, code, message}], NULL when none
    unknown_fields  jsonb,                  -- [path], NULL when none
    payload         jsonb,                  -- the payload when it is a JSON object
    account_number  text COLLATE "C",
    occurred_at     timestamptz,            -- envelope time
    raw             bytea       NOT NULL,   -- the message exactly as received
    batch_id        bigint      NOT NULL,   -- the chain link that covers this row
    row_hash        bytea       NOT NULL,   -- SHA-256 of the row's canonical encoding
    PRIMARY KEY (stream, stream_seq, published_at)
) PARTITION BY RANGE (published_at);

-- Messages whose time falls outside every monthly partition still land somewhere.
CREATE TABLE audit.events_default PARTITION OF audit.events DEFAULT;

-- Queries by account (timeline), by event type and time, and the chain walk.
CREATE INDEX events_account_idx ON audit.events (account_number, occurred_at) WHERE account_number IS NOT NULL;
CREATE INDEX events_type_time_idx ON audit.events (event_type, published_at);
CREATE INDEX events_batch_brin ON audit.events USING brin (batch_id);

-- Monthly partitions; the daemon calls this at start and daily for the months ahead.
CREATE FUNCTION audit.ensure_partitions(from_ts timestamptz, months integer) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    m date := date_trunc('month', from_ts AT TIME ZONE 'UTC')::date;
    created integer := 0;
    name text;
BEGIN
    FOR i IN 0 .. months - 1 LOOP
        name := format('events_%s', to_char(m, 'YYYY_MM'));
        IF to_regclass('audit.' || name) IS NULL THEN
            BEGIN
                EXECUTE format(
                    'CREATE TABLE audit.%I PARTITION OF audit.events FOR VALUES FROM (%L) TO (%L)',
                    name, (m::timestamp AT TIME ZONE 'UTC'), ((m + interval '1 month')::timestamp AT TIME ZONE 'UTC'));
                EXECUTE format('ALTER TABLE audit.%I OWNER TO event_audit_owner', name);
                -- Row triggers are inherited from audit.events; TRUNCATE triggers are not.
                EXECUTE format('CREATE TRIGGER no_truncate BEFORE TRUNCATE ON audit.%I FOR EACH STATEMENT EXECUTE FUNCTION audit.refuse_change()', name);
                created := created + 1;
            EXCEPTION WHEN duplicate_table THEN
                NULL;
            END;
        END IF;
        m := (m + interval '1 month')::date;
    END LOOP;
    RETURN created;
END
$$;

-- Envelope ids seen, first occurrence only: tells a duplicate from a conflict.
CREATE TABLE audit.event_ids (
    event_id      text COLLATE "C" PRIMARY KEY,
    stream        text COLLATE "C" NOT NULL,
    stream_seq    bigint      NOT NULL,
    published_at  timestamptz NOT NULL,
    digest        bytea       NOT NULL      -- SHA-256 of event name and payload text
);

-- Audit findings on envelope ids: a later message with an id already seen.
CREATE TABLE audit.id_findings (
    stream              text        NOT NULL,
    stream_seq          bigint      NOT NULL,
    published_at        timestamptz NOT NULL,
    event_id            text        NOT NULL,
    finding             text        NOT NULL CHECK (finding IN ('duplicate', 'conflict')),
    first_stream        text        NOT NULL,
    first_stream_seq    bigint      NOT NULL,
    first_published_at  timestamptz NOT NULL,
    batch_id            bigint      NOT NULL,
    PRIMARY KEY (stream, stream_seq, published_at)
);

-- The hash chain: one link per committed batch.
CREATE TABLE audit.chain_links (
    link_seq    bigint      PRIMARY KEY,
    batch_id    bigint      NOT NULL UNIQUE,
    row_count   integer     NOT NULL,
    batch_digest bytea      NOT NULL,       -- SHA-256 over the batch's row hashes, in (stream, stream_seq) order
    prev_hash   bytea       NOT NULL,
    hash        bytea       NOT NULL,       -- SHA-256(prev_hash || link_seq || batch_id || row_count || batch_digest)
    linked_at   timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE audit.chain_head (
    id        boolean PRIMARY KEY DEFAULT true CHECK (id),
    link_seq  bigint  NOT NULL,
    hash      bytea   NOT NULL
);
INSERT INTO audit.chain_head (link_seq, hash) VALUES (0, '\x0000000000000000000000000000000000000000000000000000000000000000');
CREATE SEQUENCE audit.batch_id_seq;

-- Results of `event-audit verify`, newest last.
CREATE TABLE audit.verify_runs (
    id          bigserial   PRIMARY KEY,
    verified_at timestamptz NOT NULL DEFAULT now(),
    ok          boolean     NOT NULL,
    links       bigint      NOT NULL,
    rows        bigint      NOT NULL,
    first_break text
);
