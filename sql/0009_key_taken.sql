-- 0009: a statement that inserts jobs and remembers their idempotency keys as its own transaction (the group
-- commit's one-statement path, src/queue/sql/insertJobsFenced.ts) must fail as a whole when a key it should
-- remember is held by a younger job (another writer took it): fewer keys remembered than expected. Called from
-- the statement itself; VOLATILE so that the planner neither folds nor skips it. The error is a
-- unique_violation, as the key's own insert would have raised had it no ON CONFLICT clause.
CREATE FUNCTION idempotency_keys_remembered(remembered bigint, expected bigint) RETURNS boolean
  LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  IF remembered <> expected THEN
    RAISE EXCEPTION 'idempotency key taken concurrently (% of % remembered)', remembered, expected
      USING ERRCODE = 'unique_violation';
  END IF;
  RETURN true;
END
$$;
