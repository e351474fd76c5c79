import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { parse } from 'yaml';
import { goCommand } from '../../scripts/cluster/build';
import type { ClusterSettings } from '../../scripts/cluster/layout';
import {
  clusterProcesses,
  clusterSettings,
  frontendHttpPort,
  processEnvironment,
  ROOT,
  TEMPORAL_DEPLOY_DIR,
  temporalVersions,
} from '../../scripts/cluster/layout';
import { CUSTOM_SEARCH_ATTRIBUTES, devServerTypeName } from '../../src/platform/temporal/search-attributes';

/**
 * `npm run cluster` and docker-compose.yml run Temporal from the same files in deploy/temporal/: the server
 * config template, the dynamic config, the schema script with its versions, and the namespace script with
 * Weft's search attributes. This keeps the two (and Weft's own list of attributes) in agreement.
 */
interface Service {
  image?: string;
  environment?: Record<string, string | number>;
  volumes?: string[];
  entrypoint?: string[];
  command?: string[];
}
const compose = parse(readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, Service>;
};
const service = (name: string) => compose.services[name]!;
const read = (file: string) => readFileSync(path.join(TEMPORAL_DEPLOY_DIR, file), 'utf8');
/** Where compose mounts a repository file (`./deploy/temporal/x:/target:ro` → `/target`). */
const mountOf = (definition: Service, file: string) =>
  definition.volumes?.find((volume) => volume.split(':')[0] === `./deploy/temporal/${file}`)?.split(':')[1];

const TEMPLATE = read('config/weft.yaml');
/**
 * The server renders the template with Go templates and sprig; it uses only `{{ env "X" | default "y" | quote }}`
 * forms, which this renders the same way (a `{{` of any other shape fails the test that renders it).
 */
function render(env: Record<string, string | number | undefined>): unknown {
  const body = TEMPLATE.replace(/\{\{(.*?)\}\}/g, (whole, expression: string) => {
    const parts = expression.split('|').map((part) => part.trim());
    const name = /^env "([A-Z0-9_]+)"$/.exec(parts[0]!)?.[1];
    if (!name) throw new Error(`the template has a form this test does not render: ${whole}`);
    let value = env[name] === undefined ? '' : String(env[name]);
    for (const step of parts.slice(1)) {
      const fallback = /^default "(.*)"$/.exec(step)?.[1];
      if (fallback !== undefined) value = value === '' ? fallback : value;
      else if (step === 'quote') value = JSON.stringify(value);
      else throw new Error(`the template has a pipe step this test does not render: ${step}`);
    }
    return value;
  });
  return parse(body);
}
const templateVariables = new Set([...TEMPLATE.matchAll(/env "([A-Z0-9_]+)"/g)].map((match) => match[1]!));

interface RenderedConfig {
  persistence: {
    numHistoryShards: number;
    datastores: Record<string, { sql: { pluginName: string; databaseName: string; connectAddr: string } }>;
  };
  services: Record<string, { rpc: { grpcPort: number; membershipPort: number } }>;
  dynamicConfigClient: { filepath: string };
}

describe('the Temporal cluster: npm run cluster and docker-compose.yml share their sources', () => {
  const settings: ClusterSettings = clusterSettings({});
  const versions = temporalVersions();

  it('runs one Temporal release: the images compose pulls and the server npm run cluster builds', () => {
    expect(versions.TEMPORAL_SERVER_VERSION).to.match(/^\d+\.\d+\.\d+$/);
    for (const name of ['temporal', 'temporal-schema', 'temporal-namespace']) {
      expect(service(name).image!.split(':')[1], name).to.equal(versions.TEMPORAL_SERVER_VERSION);
    }
  });

  it("brings both databases to that release's schema versions, with one script for both", function () {
    const script = read('setup-schema.sh');
    expect(script).to.include('--plugin postgres12').and.to.include('update-schema -d').and.to.include('-v "$version"');
    for (const key of ['TEMPORAL_SCHEMA_VERSION', 'TEMPORAL_VISIBILITY_SCHEMA_VERSION']) {
      expect(versions[key], key).to.match(/^\d+\.\d+$/);
      expect(script).to.include(`$${key}`);
    }
    // Compose mounts the script and versions.env side by side: the script reads the latter from its own directory.
    const schema = service('temporal-schema');
    expect(path.dirname(mountOf(schema, 'setup-schema.sh')!)).to.equal(path.dirname(mountOf(schema, 'versions.env')!));
    expect(schema.entrypoint).to.deep.equal(['sh', mountOf(schema, 'setup-schema.sh')]);
    // The release's own numbers, when its source is in the Go module cache (after `npm run cluster`).
    const cache = execFileSync(goCommand(), ['env', 'GOMODCACHE'], { encoding: 'utf8' }).trim();
    const versionFile = path.join(
      cache,
      `go.temporal.io/server@v${versions.TEMPORAL_SERVER_VERSION}/schema/postgresql/v12/version.go`,
    );
    if (!existsSync(versionFile)) this.skip();
    const source = readFileSync(versionFile, 'utf8');
    expect(/const Version = "([\d.]+)"/.exec(source)?.[1]).to.equal(versions.TEMPORAL_SCHEMA_VERSION);
    expect(/const VisibilityVersion = "([\d.]+)"/.exec(source)?.[1]).to.equal(
      versions.TEMPORAL_VISIBILITY_SCHEMA_VERSION,
    );
  });

  it('starts the server with the same config file in both, every variable compose sets read by it', () => {
    const temporal = service('temporal');
    expect(mountOf(temporal, 'config/weft.yaml')).to.equal('/etc/temporal/config/weft.yaml');
    expect(temporal.entrypoint).to.include.members(['temporal-server', '--env', 'weft']);
    expect(temporal.entrypoint!.slice(1, 5)).to.deep.equal(['--root', '/etc/temporal', '--config', 'config']);
    for (const name of Object.keys(temporal.environment!)) expect(templateVariables, name).to.include(name);
    for (const target of clusterProcesses(settings)) {
      for (const name of Object.keys(processEnvironment(settings, target)))
        expect(templateVariables, name).to.include(name);
    }
  });

  it('renders Postgres persistence and visibility with 512 shards in compose and 16 here, one dynamic config', () => {
    const temporal = service('temporal');
    const composeEnv = Object.fromEntries(
      Object.entries(temporal.environment!).map(([key, value]) => [
        key,
        String(value).replace(/^\$\{[A-Z_]+:-(\d+)\}$/, '$1'),
      ]),
    );
    const composed = render(composeEnv) as RenderedConfig;
    expect(composed.persistence.numHistoryShards).to.equal(512);
    expect(composed.dynamicConfigClient.filepath).to.equal(mountOf(temporal, 'dynamic-config.yaml'));
    const native = render(processEnvironment(settings, clusterProcesses(settings)[0]!)) as RenderedConfig;
    expect(native.persistence.numHistoryShards).to.equal(16);
    expect(native.dynamicConfigClient.filepath).to.equal(path.join(TEMPORAL_DEPLOY_DIR, 'dynamic-config.yaml'));
    for (const config of [composed, native]) {
      expect(config.persistence.datastores.default!.sql.pluginName).to.equal('postgres12');
      expect(config.persistence.datastores.default!.sql.databaseName).to.equal('temporal');
      expect(config.persistence.datastores.visibility!.sql.databaseName).to.equal('temporal_visibility');
    }
  });

  it('runs frontend, two history hosts, two matching hosts and the worker on distinct ports', () => {
    const processes = clusterProcesses(settings);
    expect(processes.map((each) => each.service).sort()).to.deep.equal([
      'frontend',
      'history',
      'history',
      'matching',
      'matching',
      'worker',
    ]);
    const ports = [...processes.flatMap((each) => [each.grpcPort, each.membershipPort]), frontendHttpPort(settings)];
    expect(new Set(ports).size).to.equal(ports.length);
    // Each process renders its own service's ports from the one template.
    for (const target of processes) {
      const config = render(processEnvironment(settings, target)) as RenderedConfig;
      expect(config.services[target.service]!.rpc, target.name).to.deep.equal({
        ...config.services[target.service]!.rpc,
        grpcPort: target.grpcPort,
        membershipPort: target.membershipPort,
      });
    }
  });

  it("registers exactly Weft's search attributes, with one script for both", () => {
    const script = read('namespace.sh');
    const listed = /ATTRIBUTES="([^"]+)"/.exec(script)![1]!.split(/\s+/).filter(Boolean).sort();
    expect(listed).to.deep.equal(CUSTOM_SEARCH_ATTRIBUTES.map((key) => `${key.name}=${devServerTypeName(key)}`).sort());
    const namespace = service('temporal-namespace');
    expect(namespace.entrypoint).to.deep.equal(['sh', mountOf(namespace, 'namespace.sh')]);
    expect(namespace.environment?.TEMPORAL_NAMESPACE).to.equal('default');
  });
});
