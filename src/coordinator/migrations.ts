/**
 * The coordinator's schema in PostgreSQL, as numbered migrations (like the
 * SQLite state's): each runs once, in order, in one transaction, under an
 * advisory lock so that processes starting together migrate once.
 *
 * Every limit is per API key, by fingerprint (never the key). Times are the
 * database's own clock in milliseconds, so processes on machines whose
 * clocks differ still share one window.
 *
 * A released migration is never edited (a shared database was migrated by
 * it): test/coordinator/migrations.test.ts holds each one's checksum. A
 * change is a new migration, added to the end.
 */
export const COORDINATOR_MIGRATIONS: readonly string[] = Object.freeze([
  /* 1 */ `
  CREATE OR REPLACE FUNCTION genbatch_now_ms() RETURNS bigint LANGUAGE sql VOLATILE AS
    $$ SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint $$;

  -- Requests of one kind (submit, read, upload) that count in a key's sliding window: from their send
  -- until one window after their answer (the service counts a request somewhere in between).
  CREATE TABLE genbatch_sends (
    id bigserial PRIMARY KEY,
    key_fp text NOT NULL,
    kind text NOT NULL,
    sent_at bigint NOT NULL,
    answered_at bigint
  );
  CREATE INDEX genbatch_sends_key ON genbatch_sends (key_fp, kind);

  -- A 429's Retry-After holds every process's requests of that kind on that key.
  CREATE TABLE genbatch_pauses (
    key_fp text NOT NULL,
    kind text NOT NULL,
    until_ms bigint NOT NULL,
    PRIMARY KEY (key_fp, kind)
  );

  -- In-flight slots, held under a lease that the holding process renews while its job runs:
  -- a process that dies frees its slots when their lease runs out.
  CREATE TABLE genbatch_slots (
    key_fp text NOT NULL,
    type text NOT NULL,
    holder text NOT NULL,
    item text NOT NULL,
    lease_until bigint NOT NULL,
    PRIMARY KEY (key_fp, type, holder, item)
  );

  -- Credits charged per key day, and the credits of submissions not answered yet (under a lease too).
  CREATE TABLE genbatch_day_credits (
    key_fp text NOT NULL,
    day bigint NOT NULL,
    charged bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (key_fp, day)
  );
  CREATE TABLE genbatch_reservations (
    id bigserial PRIMARY KEY,
    key_fp text NOT NULL,
    day bigint NOT NULL,
    credits bigint NOT NULL,
    holder text NOT NULL,
    lease_until bigint NOT NULL
  );
  CREATE INDEX genbatch_reservations_key ON genbatch_reservations (key_fp, day);

  -- Submissions blocked by moderation, for the account's trailing 7 days.
  CREATE TABLE genbatch_blocks (key_fp text NOT NULL, at bigint NOT NULL);
  CREATE INDEX genbatch_blocks_key ON genbatch_blocks (key_fp, at);

  -- One send of kind on key if fewer than max_count count in the window now: its id (> 0); else
  -- minus the milliseconds to wait (at least 1). An unanswered send older than stale_ms counts as
  -- answered then (its process died on the wire).
  CREATE OR REPLACE FUNCTION genbatch_acquire_send(p_key text, p_kind text, p_count int, p_window_ms bigint, p_stale_ms bigint)
  RETURNS bigint LANGUAGE plpgsql AS $$
  DECLARE
    now_ms bigint := genbatch_now_ms();
    paused bigint;
    n int;
    soonest bigint;
    new_id bigint;
  BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('genbatch/' || p_key || '/' || p_kind));
    SELECT until_ms INTO paused FROM genbatch_pauses WHERE key_fp = p_key AND kind = p_kind;
    IF paused IS NOT NULL AND paused > now_ms THEN RETURN -(paused - now_ms); END IF;
    DELETE FROM genbatch_sends WHERE key_fp = p_key AND kind = p_kind
      AND coalesce(answered_at, sent_at + p_stale_ms) + p_window_ms < now_ms;
    SELECT count(*), min(coalesce(answered_at, sent_at + p_stale_ms)) INTO n, soonest
      FROM genbatch_sends WHERE key_fp = p_key AND kind = p_kind;
    IF n >= p_count THEN RETURN -greatest(1, soonest + p_window_ms + 1 - now_ms); END IF;
    INSERT INTO genbatch_sends (key_fp, kind, sent_at) VALUES (p_key, p_kind, now_ms) RETURNING id INTO new_id;
    RETURN new_id;
  END $$;

  -- A slot of type on key for (holder, item) if fewer than p_cap are held: true (kept, renewed, if held already).
  CREATE OR REPLACE FUNCTION genbatch_acquire_slot(p_key text, p_type text, p_cap int, p_holder text, p_item text, p_lease_ms bigint, p_force boolean)
  RETURNS boolean LANGUAGE plpgsql AS $$
  DECLARE
    now_ms bigint := genbatch_now_ms();
    n int;
  BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('genbatch/' || p_key || '/slots/' || p_type));
    DELETE FROM genbatch_slots WHERE key_fp = p_key AND type = p_type AND lease_until < now_ms;
    UPDATE genbatch_slots SET lease_until = now_ms + p_lease_ms WHERE key_fp = p_key AND type = p_type AND holder = p_holder AND item = p_item;
    IF FOUND THEN RETURN true; END IF;
    SELECT count(*) INTO n FROM genbatch_slots WHERE key_fp = p_key AND type = p_type;
    IF n >= p_cap AND NOT p_force THEN RETURN false; END IF;
    INSERT INTO genbatch_slots VALUES (p_key, p_type, p_holder, p_item, now_ms + p_lease_ms);
    RETURN true;
  END $$;

  -- Credits reserved on key's day if charged + reserved + p_credits stays within p_cap: the reservation's id; else 0.
  CREATE OR REPLACE FUNCTION genbatch_reserve_credits(p_key text, p_day bigint, p_credits bigint, p_cap bigint, p_holder text, p_lease_ms bigint)
  RETURNS bigint LANGUAGE plpgsql AS $$
  DECLARE
    now_ms bigint := genbatch_now_ms();
    used bigint;
    new_id bigint;
  BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('genbatch/' || p_key || '/credits'));
    DELETE FROM genbatch_reservations WHERE key_fp = p_key AND lease_until < now_ms;
    SELECT coalesce((SELECT charged FROM genbatch_day_credits WHERE key_fp = p_key AND day = p_day), 0)
         + coalesce((SELECT sum(credits) FROM genbatch_reservations WHERE key_fp = p_key AND day = p_day), 0) INTO used;
    IF used + p_credits > p_cap THEN RETURN 0; END IF;
    INSERT INTO genbatch_reservations (key_fp, day, credits, holder, lease_until) VALUES (p_key, p_day, p_credits, p_holder, now_ms + p_lease_ms) RETURNING id INTO new_id;
    RETURN new_id;
  END $$;
  `,
  /* 2 */ `
  -- A submission still unanswered when its key day ends may be charged on the next (it reaches the service
  -- later): reservations of earlier days count on this one until they are settled, as a process's own
  -- unanswered submissions count on every day in its own gate.
  CREATE OR REPLACE FUNCTION genbatch_reserve_credits(p_key text, p_day bigint, p_credits bigint, p_cap bigint, p_holder text, p_lease_ms bigint)
  RETURNS bigint LANGUAGE plpgsql AS $$
  DECLARE
    now_ms bigint := genbatch_now_ms();
    used bigint;
    new_id bigint;
  BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('genbatch/' || p_key || '/credits'));
    DELETE FROM genbatch_reservations WHERE key_fp = p_key AND lease_until < now_ms;
    SELECT coalesce((SELECT charged FROM genbatch_day_credits WHERE key_fp = p_key AND day = p_day), 0)
         + coalesce((SELECT sum(credits) FROM genbatch_reservations WHERE key_fp = p_key AND day <= p_day), 0) INTO used;
    IF used + p_credits > p_cap THEN RETURN 0; END IF;
    INSERT INTO genbatch_reservations (key_fp, day, credits, holder, lease_until) VALUES (p_key, p_day, p_credits, p_holder, now_ms + p_lease_ms) RETURNING id INTO new_id;
    RETURN new_id;
  END $$;
  `,
]);
