import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A delivery record in one round trip: the function scopes its own statement (as
 * weft_scoped_read does for reads) and inserts under RLS as the calling role (security invoker),
 * so the policy's WITH CHECK still holds it to that workspace. The intake's refusals and its
 * unkeyed, undispatched acceptances are this one statement instead of a four-statement transaction.
 */
export class WebhookIntakeWrites1763780009010 implements MigrationInterface {
  name = 'WebhookIntakeWrites1763780009010';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
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
END $$;`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(
      `DROP FUNCTION IF EXISTS weft_record_webhook_delivery(uuid, uuid, jsonb, bytea, integer, text, text, text, text)`,
    );
  }
}
