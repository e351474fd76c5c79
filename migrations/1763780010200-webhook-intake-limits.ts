import type { MigrationInterface, QueryRunner } from 'typeorm';
import { grantToAppRole } from './1763780008400-credit-settlement';

/** How many leading bytes of an unverified request's body are kept (review H-3). */
export const UNVERIFIED_BODY_PREFIX_BYTES = 256;

/**
 * The webhook intake cannot be flooded (issue 23 item 4, review H-3, L-4):
 * - Every delivery keeps its body's size and SHA-256; an unverified one (401) keeps only its first
 *   256 bytes. Existing 401 records are cut down the same way.
 * - A verified delivery keeps the `t` it was signed at: within the skew window a second request with
 *   the same `t` and the same signed bytes (hence the same signature) is a duplicate of the first,
 *   whatever its idempotency key. A partial unique index holds one original per (t, body).
 * - A trigger counts the intake requests its slug refused for rate (a counter, not a row each),
 *   added in batches by one narrow definer function; counting does not bump the trigger's revision,
 *   so it never invalidates the intake's cached configuration.
 * - `weft_record_webhook_delivery` takes the new columns, and answers an existing original instead
 *   of failing when the request repeats one.
 * - Triggers created by a user JWT before the expiry was stored get the default 30-day JWT lifetime
 *   from their last identity change, so a purged revocation can no longer bring them back.
 */
export class WebhookIntakeLimits1763780010200 implements MigrationInterface {
  name = 'WebhookIntakeLimits1763780010200';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
ALTER TABLE webhook_deliveries ADD COLUMN body_size integer, ADD COLUMN body_sha256 text,
  ADD COLUMN signed_t bigint;
UPDATE webhook_deliveries SET body_size = octet_length(body), body_sha256 = encode(sha256(body), 'hex')
  WHERE body IS NOT NULL;
UPDATE webhook_deliveries SET body = substring(body FROM 1 FOR ${UNVERIFIED_BODY_PREFIX_BYTES})
  WHERE status_code = 401 AND octet_length(body) > ${UNVERIFIED_BODY_PREFIX_BYTES};
CREATE UNIQUE INDEX webhook_deliveries_signature_idx ON webhook_deliveries (trigger_id, signed_t, body_sha256)
  WHERE signed_t IS NOT NULL AND duplicate_of IS NULL AND status_code = 202 AND redelivery_of IS NULL;

ALTER TABLE webhook_triggers ADD COLUMN rate_limited_count bigint NOT NULL DEFAULT 0,
  ADD COLUMN rate_limited_at timestamptz;

UPDATE webhook_triggers SET principal = jsonb_set(principal, '{credential,expiresAt}',
    to_jsonb(updated_at + interval '30 days'))
  WHERE principal->'credential'->>'kind' = 'user_jwt' AND NOT (principal->'credential' ? 'expiresAt');

-- The counters are not configuration: only a change of anything else bumps the revision.
CREATE OR REPLACE FUNCTION weft_webhook_trigger_bump_revision() RETURNS trigger
  LANGUAGE plpgsql SET search_path = public AS $$
BEGIN
  IF to_jsonb(NEW) - '{revision,updated_at,rate_limited_count,rate_limited_at}'::text[]
      IS DISTINCT FROM to_jsonb(OLD) - '{revision,updated_at,rate_limited_count,rate_limited_at}'::text[] THEN
    NEW.revision := OLD.revision + 1;
  END IF;
  RETURN NEW;
END $$;

-- The intake knows only slugs when it refuses for rate; one call adds a batch of refusals to theirs
-- (slugs of no trigger change nothing).
CREATE FUNCTION weft_count_webhook_refusals(p_slugs text[], p_counts integer[]) RETURNS void
  LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = public
  AS $$
    UPDATE webhook_triggers t SET rate_limited_count = t.rate_limited_count + greatest(r.n, 0),
      rate_limited_at = now()
    FROM unnest(p_slugs, p_counts) AS r(slug, n)
    WHERE t.slug = r.slug
  $$;
REVOKE ALL ON FUNCTION weft_count_webhook_refusals(text[], integer[]) FROM PUBLIC;

DROP FUNCTION weft_record_webhook_delivery(uuid, uuid, jsonb, bytea, integer, text, text, text, text);
CREATE FUNCTION weft_record_webhook_delivery(p_workspace uuid, p_trigger uuid, p_headers jsonb, p_body bytea,
    p_status integer, p_reason text, p_filter_result text, p_filter_error text, p_key text,
    p_body_size integer, p_body_sha256 text, p_signed_t bigint)
  RETURNS TABLE (id uuid, duplicate_of uuid, execution_id uuid)
  LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET search_path = public AS $$
DECLARE
  v_id uuid;
  v_original uuid;
  v_execution uuid;
BEGIN
  PERFORM set_config('app.workspace_id', p_workspace::text, true);
  INSERT INTO webhook_deliveries AS d (workspace_id, trigger_id, headers, body, status_code, reason, filter_result,
      filter_error, idempotency_key, body_size, body_sha256, signed_t)
    VALUES (p_workspace, p_trigger, p_headers, p_body, p_status, p_reason, p_filter_result, p_filter_error, p_key,
      p_body_size, p_body_sha256, p_signed_t)
    ON CONFLICT DO NOTHING
    RETURNING d.id INTO v_id;
  IF v_id IS NOT NULL THEN
    RETURN QUERY SELECT v_id, NULL::uuid, NULL::uuid;
    RETURN;
  END IF;
  -- The same signed request again: recorded as a duplicate of its original, which answers.
  SELECT d.id, d.execution_id INTO v_original, v_execution FROM webhook_deliveries d
    WHERE d.trigger_id = p_trigger AND d.signed_t = p_signed_t AND d.body_sha256 = p_body_sha256
      AND d.duplicate_of IS NULL AND d.status_code = 202 AND d.redelivery_of IS NULL;
  INSERT INTO webhook_deliveries (workspace_id, trigger_id, headers, body, status_code, reason, idempotency_key,
      body_size, body_sha256, duplicate_of)
    VALUES (p_workspace, p_trigger, p_headers, p_body, p_status, 'duplicate', p_key, p_body_size, p_body_sha256,
      v_original)
    RETURNING webhook_deliveries.id INTO v_id;
  RETURN QUERY SELECT v_id, v_original, v_execution;
END $$;`);
    await grantToAppRole(q, 'weft_count_webhook_refusals(text[], integer[])');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
DROP FUNCTION IF EXISTS weft_record_webhook_delivery(uuid, uuid, jsonb, bytea, integer, text, text, text, text,
  integer, text, bigint);
CREATE FUNCTION weft_record_webhook_delivery(p_workspace uuid, p_trigger uuid, p_headers jsonb, p_body bytea,
    p_status integer, p_reason text, p_filter_result text, p_filter_error text, p_key text)
  RETURNS uuid
  LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET search_path = public AS $$
DECLARE
  v_id uuid;
BEGIN
  PERFORM set_config('app.workspace_id', p_workspace::text, true);
  INSERT INTO webhook_deliveries (workspace_id, trigger_id, headers, body, status_code, reason, filter_result,
      filter_error, idempotency_key)
    VALUES (p_workspace, p_trigger, p_headers, p_body, p_status, p_reason, p_filter_result, p_filter_error, p_key)
    RETURNING id INTO v_id;
  RETURN v_id;
END $$;
DROP FUNCTION IF EXISTS weft_count_webhook_refusals(text[], integer[]);
CREATE OR REPLACE FUNCTION weft_webhook_trigger_bump_revision() RETURNS trigger
  LANGUAGE plpgsql SET search_path = public AS $$
BEGIN
  NEW.revision := OLD.revision + 1;
  RETURN NEW;
END $$;
ALTER TABLE webhook_triggers DROP COLUMN IF EXISTS rate_limited_at, DROP COLUMN IF EXISTS rate_limited_count;
DROP INDEX IF EXISTS webhook_deliveries_signature_idx;
ALTER TABLE webhook_deliveries DROP COLUMN IF EXISTS signed_t, DROP COLUMN IF EXISTS body_sha256,
  DROP COLUMN IF EXISTS body_size;
`);
  }
}
