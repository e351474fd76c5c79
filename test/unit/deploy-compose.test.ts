import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import Ajv2019 from 'ajv/dist/2019';
import { expect } from 'chai';
import { parse } from 'yaml';
import { DISPATCH_SETTINGS } from '../../src/platform/temporal/dev-server';

/**
 * docker-compose.yml, without a container engine (this machine has none): the file validates against the
 * Compose Specification's JSON schema (vendored in deploy/compose-spec/, SOURCE.md says from where), and its
 * wiring is the production shape issue 29 asks for. Nothing here starts a container.
 */
const ROOT = path.resolve(__dirname, '../..');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');
const composeText = read('docker-compose.yml');

interface Service {
  image?: string;
  build?: unknown;
  environment?: Record<string, string | number | boolean | null>;
  volumes?: string[];
  ports?: string[];
  deploy?: { replicas?: number };
  depends_on?: Record<string, { condition: string }>;
  entrypoint?: string[];
}
const compose = parse(composeText, { merge: true }) as { services: Record<string, Service> };
const service = (name: string): Service => {
  const found = compose.services[name];
  if (!found) throw new Error(`docker-compose.yml has no service ${name}`);
  return found;
};

function composeValidator() {
  // Its `$schema` names draft 2019-09 with a trailing `#` that ajv does not know by that name; Ajv2019 is
  // that draft. The 2021 schema still labels subschemas with draft-04 `id`s, which no `$ref` uses and
  // ajv refuses: dropped (string values only; a property named `id` would hold an object).
  const withoutIds = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(withoutIds);
    if (node === null || typeof node !== 'object') return node;
    const entries = Object.entries(node).filter(([key, value]) => !(key === 'id' && typeof value === 'string'));
    return Object.fromEntries(entries.map(([key, value]) => [key, withoutIds(value)]));
  };
  const { $schema: _draft, ...schema } = withoutIds(
    JSON.parse(read('deploy/compose-spec/compose-spec.json')),
  ) as Record<string, unknown>;
  const ajv = new Ajv2019({ strict: false, allErrors: true });
  ajv.addFormat('duration', /^(\d+(\.\d+)?(ns|us|ms|s|m|h))+$/);
  ajv.addFormat('ports', true);
  ajv.addFormat('expose', true);
  ajv.addFormat('subnet_ip_address', true);
  return ajv.compile(schema);
}

describe('docker-compose.yml, the production-shaped deployment', () => {
  const validate = composeValidator();

  it('validates against the Compose Specification schema', () => {
    const valid = validate(compose);
    expect(validate.errors ?? [], JSON.stringify(validate.errors, null, 2)).to.deep.equal([]);
    expect(valid).to.equal(true);
  });

  it('the schema check fails a file with a misspelt key or a wrong type', () => {
    const misspelt = structuredClone(compose) as { services: Record<string, Record<string, unknown>> };
    misspelt.services.api!.replica = 2;
    expect(validate(misspelt)).to.equal(false);
    const wrongType = structuredClone(compose) as { services: Record<string, Record<string, unknown>> };
    wrongType.services.worker!.deploy = { replicas: 'two' };
    expect(validate(wrongType)).to.equal(false);
  });

  it('has no secret defaults: every password, key and secret is required with a message', () => {
    const required = new Set([...composeText.matchAll(/\$\{([A-Z0-9_]+):\?[^}]+\}/g)].map((match) => match[1]));
    expect([...required].sort()).to.deep.equal([
      'JWT_SECRET',
      'METRICS_TOKEN',
      'POSTGRES_PASSWORD',
      'TEMPORAL_DB_PASSWORD',
      'WEFT_APP_DB_PASSWORD',
      'WEFT_ENCRYPTION_KEY',
      'WEFT_OWNER_DB_PASSWORD',
    ]);
    // A default is allowed only when empty (an optional setting, e.g. OPENAI_API_KEY), never for a secret.
    for (const [, name, fallback] of composeText.matchAll(/\$\{([A-Z0-9_]+):-([^}]*)\}/g)) {
      if (/PASSWORD|SECRET|_KEY$|TOKEN/.test(name!)) expect(fallback, name).to.equal('');
    }
    // No credential written into a connection URL: each URL's password is a required variable.
    for (const [url] of composeText.matchAll(/postgres:\/\/[^\s"]+/g)) {
      expect(url, url).to.match(/^postgres:\/\/\w+:\$\{\w+:\?/);
    }
    expect(composeText).not.to.match(/POSTGRES_PASSWORD: postgres\b|weft_app:weft_app|weft_owner:weft_owner/);
  });

  it('runs Temporal as a cluster: the server image on Postgres, its schema by the admin tools', () => {
    const temporal = service('temporal');
    expect(temporal.image).to.match(/^temporalio\/server:/);
    expect(temporal.environment?.DB).to.equal('postgres12');
    expect(temporal.environment?.POSTGRES_SEEDS).to.equal('postgres');
    expect(temporal.depends_on?.['temporal-schema']?.condition).to.equal('service_completed_successfully');
    const schema = service('temporal-schema');
    expect(schema.image).to.match(/^temporalio\/admin-tools:/);
    const script = read('deploy/temporal/setup-schema.sh');
    for (const step of ['create', 'setup-schema -v 0.0', 'update-schema -d']) expect(script).to.include(step);
    expect(script).to.include('--plugin postgres12');
    // The admin tools and the server are the same Temporal release.
    expect(schema.image!.split(':')[1]).to.equal(temporal.image!.split(':')[1]);
  });

  it("mounts a dynamic-config file holding exactly the dev server's dispatch settings", () => {
    const temporal = service('temporal');
    const target = String(temporal.environment?.DYNAMIC_CONFIG_FILE_PATH);
    const mount = temporal.volumes?.find((volume) => volume.split(':')[1] === target);
    expect(mount, 'a volume mounted at DYNAMIC_CONFIG_FILE_PATH').to.be.a('string');
    const file = parse(read(mount!.split(':')[0]!)) as Record<string, { value: unknown; constraints?: unknown }[]>;
    const unconstrained = Object.entries(file)
      .filter(([, values]) => values.some((entry) => entry.constraints === undefined))
      .map(([key, values]) => `${key}=${values.find((entry) => entry.constraints === undefined)!.value}`);
    expect(unconstrained.sort()).to.deep.equal([...DISPATCH_SETTINGS].sort());
  });

  it("points the Temporal UI at Weft's codec endpoint, whose origin the API allows", () => {
    const ui = service('temporal-ui').environment!;
    expect(String(ui.TEMPORAL_CODEC_ENDPOINT)).to.match(/\/v1\/temporal-codec$/);
    expect(read('src/platform/temporal/codec-server/routes.ts')).to.include("'/v1/temporal-codec/decode'");
    expect(service('api').environment?.TEMPORAL_UI_ORIGIN).to.be.a('string');
  });

  it('runs two API replicas behind the load balancer and two workers, each with the app role only', () => {
    const api = service('api');
    const worker = service('worker');
    expect(api.deploy?.replicas).to.equal(2);
    expect(worker.deploy?.replicas).to.equal(2);
    expect(api.environment?.WEFT_PROCESS).to.equal('api');
    expect(worker.environment?.WEFT_PROCESS).to.equal('worker');
    // Replicas cannot share a host port: only the load balancer publishes one.
    expect(api.ports).to.equal(undefined);
    const lb = service('lb');
    expect(lb.ports).to.deep.equal(['8080:8080']);
    const nginx = read('deploy/nginx/weft.conf');
    expect(nginx).to.include('set $api http://api:8080;').and.to.include('proxy_pass $api;');
    for (const process of [api, worker]) {
      expect(process.environment?.DATABASE_OWNER_URL).to.equal(undefined);
      expect(process.environment?.DATABASE_ADMIN_URL).to.equal(undefined);
      expect(String(process.environment?.DATABASE_URL)).to.match(/^postgres:\/\/weft_app:/);
      expect(process.environment?.TEMPORAL_DEV_SERVER).to.equal('never');
    }
  });

  it('keeps /metrics private: a token on the API and the workers, and nothing forwarded by the load balancer', () => {
    for (const name of ['api', 'worker']) {
      const environment = service(name).environment!;
      expect(String(environment.METRICS_TOKEN), name).to.match(/^\$\{METRICS_TOKEN:\?/);
      expect(environment.METRICS_PUBLIC, name).to.equal(undefined);
    }
    expect(service('worker').ports, 'the workers publish no metrics port').to.equal(undefined);
    const nginx = read('deploy/nginx/weft.conf');
    const blocked = /location = \/metrics \{\s*return 404;\s*\}/.exec(nginx);
    expect(blocked, 'nginx answers /metrics itself').not.to.equal(null);
    // An exact match wins over `location /` whatever the order, but keep it first for the reader.
    expect(blocked!.index).to.be.lessThan(nginx.indexOf('location / {'));
  });

  it('mounts only files that exist in the repository', () => {
    for (const [name, definition] of Object.entries(compose.services)) {
      for (const volume of definition.volumes ?? []) {
        const source = volume.split(':')[0]!;
        if (source.startsWith('./')) expect(existsSync(path.join(ROOT, source)), `${name}: ${source}`).to.equal(true);
      }
    }
  });
});
