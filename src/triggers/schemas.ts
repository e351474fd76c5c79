import { z } from 'zod';
import { FILTER_RESULTS } from '../filters/filter';
import { LIMITS } from '../rules/limits';
import { RunTemplate } from '../runs/schemas';
import { SIGNATURE_SCHEMES } from './schemes';

const timestamp = z.iso.datetime({ offset: true });

/** A stored slug: what was asked for, `-`, and a random suffix of ten characters. */
export const SLUG_PATTERN = /^[a-z0-9][a-z0-9-]{2,62}$/;
const REQUESTED_SLUG = /^[a-z0-9][a-z0-9-]{2,51}$/;

const Slug = z
  .string()
  .regex(REQUESTED_SLUG, 'A slug is 3–52 characters of a-z, 0-9 and -, starting with a letter or digit')
  .describe(
    'Names the intake URL `/v1/triggers/webhook/{slug}`: the trigger’s slug is this, `-` and ten random ' +
      'characters (the response has it), so no two workspaces ever meet on one.',
  );

export const EventFilter = z
  .object({
    expression: z
      .string()
      .trim()
      .min(1)
      .max(LIMITS.webhook.filterChars)
      .describe('JMESPath over `{headers, body, trigger}`; compiled when saved (a syntax error is 422).'),
  })
  .strict()
  .meta({ id: 'TriggerEventFilter' });

const Scheme = z
  .enum(SIGNATURE_SCHEMES)
  .describe(
    'How senders sign: `weft` (`X-Service-Signature`, the default), `stripe` (`Stripe-Signature`), ' +
      '`github` (`X-Hub-Signature-256`), `slack` (`X-Slack-Signature`), `standard` (Standard Webhooks, Svix).',
  );

export const SignatureRequest = z
  .object({
    scheme: Scheme.optional(),
    secret: z
      .string()
      .regex(/^[\x21-\x7e]{16,256}$/, 'A secret is 16–256 printable ASCII characters without spaces')
      .optional()
      .describe(
        'The secret the sender shows (Stripe’s `whsec_…`, Slack’s signing secret), used from now on; the ' +
          'previous one keeps verifying through the rotation grace. Omitted: Weft generates one.',
      ),
  })
  .strict()
  .meta({ id: 'TriggerSignatureRequest' });
export type SignatureRequest = z.output<typeof SignatureRequest>;

export const CreateTriggerRequest = z
  .object({
    slug: Slug,
    event_filter: EventFilter.nullable().optional(),
    run: RunTemplate.describe('The run a matching delivery dispatches, validated as `POST /v1/runs` validates it.'),
    enabled: z.boolean().default(true),
    signature: SignatureRequest.optional().describe('Absent: the `weft` scheme with a generated secret.'),
  })
  .strict()
  .meta({ id: 'CreateTriggerRequest' });
export type CreateTriggerRequest = z.output<typeof CreateTriggerRequest>;

export const UpdateTriggerRequest = z
  .object({
    enabled: z.boolean().optional(),
    event_filter: EventFilter.nullable().optional().describe('null removes the filter.'),
    run: RunTemplate.optional(),
    signature: SignatureRequest.optional().describe(
      'A new scheme (with a new secret: the one given, else a generated one, shown in this response), or ' +
        'the sender’s new secret.',
    ),
    rotate_secret: z
      .boolean()
      .optional()
      .describe(
        `true: a new secret, shown in this response; the previous one stays valid for ` +
          `${LIMITS.webhook.rotationGraceHours} hours.`,
      ),
  })
  .strict()
  .meta({ id: 'UpdateTriggerRequest' });
export type UpdateTriggerRequest = z.output<typeof UpdateTriggerRequest>;

export const TriggerRow = z
  .object({
    id: z.uuid(),
    slug: z.string(),
    enabled: z.boolean(),
    event_filter: z.object({ expression: z.string() }).nullable(),
    // Everything the template holds (tags, concurrency, budget, flow …), as it was validated at save.
    run: RunTemplate,
    signature: z.object({ scheme: Scheme }).meta({ id: 'TriggerSignature' }),
    previous_secret_expires_at: timestamp
      .nullable()
      .describe('While set and in the future, the secret before the last rotation still verifies.'),
    rate_limited: z
      .object({
        count: z.number().int().describe('Intake requests to this slug refused for rate (429), ever.'),
        last_at: timestamp.nullable().describe('When the last of them was counted.'),
      })
      .describe('Refusals are counted in batches, about a second after they happen.'),
    suspended: z
      .object({ reason: z.string(), at: timestamp })
      .nullable()
      .describe(
        `Set when Weft disabled the trigger because its filter ran out of its budget ` +
          `${LIMITS.webhook.filter.suspendAfterTimeouts} times in a row (issue 43); a PATCH with ` +
          '`enabled: true` enables it again and clears this.',
      ),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .meta({ id: 'Trigger' });
export type TriggerRow = z.input<typeof TriggerRow>;

export const TriggerWithSecret = TriggerRow.extend({
  secret: z
    .string()
    .describe(
      'The HMAC key (used as is; for `standard`, `whsec_` + the base64 of the key). Shown only on creation ' +
        'and rotation.',
    ),
}).meta({ id: 'TriggerWithSecret' });

export const UpdatedTrigger = TriggerRow.extend({
  secret: z.string().optional().describe('The new secret, present only when `rotate_secret` was true.'),
}).meta({ id: 'UpdatedTrigger' });

export const TriggerIdParams = z.object({ id: z.uuid() });
export const DeliveryParams = z.object({ id: z.uuid(), delivery_id: z.uuid() });
export const SlugParams = z.object({ slug: z.string() });

export const DeliveryListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(LIMITS.webhook.list.max).default(LIMITS.webhook.list.default),
  cursor: z
    .uuid()
    .optional()
    .describe('The last `delivery_id` of the previous page: the next (older) page follows it.'),
});

export const DeliverySummary = z
  .object({
    delivery_id: z.uuid(),
    status_code: z.number().int(),
    reason: z.string().nullable(),
    execution_id: z.uuid().nullable(),
    received_at: timestamp,
    filter_result: z.enum(FILTER_RESULTS).nullable(),
    duplicate_of: z.uuid().nullable(),
    redelivery_of: z.uuid().nullable(),
  })
  .meta({ id: 'DeliverySummary' });
export type DeliverySummary = z.input<typeof DeliverySummary>;

export const DeliveryDetail = DeliverySummary.extend({
  trigger_id: z.uuid(),
  idempotency_key: z.string().nullable(),
  filter_error: z.string().nullable(),
  headers: z
    .array(z.array(z.string()).length(2))
    .describe('As received: [name, value] pairs in order, names in their original case.'),
  body_base64: z
    .string()
    .nullable()
    .describe('The exact bytes received, or their first bytes (`body_truncated`); null for a 413.'),
  body_text: z.string().nullable().describe('The body as UTF-8 text, when it is valid UTF-8.'),
  body_size: z.number().int().nullable().describe('The size of the whole body received (null for a 413).'),
  body_sha256: z.string().nullable().describe('The SHA-256 of the whole body received, in hex (null for a 413).'),
  body_truncated: z
    .boolean()
    .describe(
      `True when only the body’s first ${LIMITS.webhook.intake.unverifiedBodyBytes} bytes were kept: an ` +
        'unverified request (401) is not stored whole.',
    ),
}).meta({ id: 'DeliveryDetail' });
export type DeliveryDetail = z.input<typeof DeliveryDetail>;

export const IntakeAccepted = z
  .object({
    delivery_id: z.uuid(),
    execution_id: z.uuid().optional().describe('The dispatched (or, for a duplicate key, earlier) run.'),
  })
  .meta({ id: 'WebhookAccepted' });
export type IntakeAccepted = z.input<typeof IntakeAccepted>;

export const IntakeRefused = z
  .object({
    delivery_id: z.uuid(),
    reason: z.enum(['signature_invalid', 'idempotency_key_invalid']),
  })
  .meta({ id: 'WebhookRefused' });

export const IntakeHeaders = z.object({
  'x-service-signature': z.string().describe('`t=<unix seconds>,v1=<lowercase hex>`; several `v1` may be sent.'),
  'x-service-idempotency-key': z
    .string()
    .max(LIMITS.webhook.idempotencyKeyChars)
    .optional()
    .describe(`At most ${LIMITS.webhook.idempotencyKeyChars} printable ASCII characters; longer is 400.`),
});

export const SlackChallenge = z.object({ challenge: z.string() }).meta({ id: 'WebhookChallenge' });

export const RedeliverResponse = z
  .object({ delivery_id: z.uuid(), execution_id: z.uuid() })
  .meta({ id: 'RedeliverResponse' });
