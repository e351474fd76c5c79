import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';

const run = promisify(execFile);
const SCRIPT = path.resolve(__dirname, '../../scripts/debian-source.sh');

/** Runs set-up's deb-src derivation over an apt directory made of `files`, on a `codename` machine. */
async function derive(files: Record<string, string>, codename = 'bookworm') {
  const apt = await mkdtemp(path.join(tmpdir(), 'weft-apt-'));
  try {
    await mkdir(path.join(apt, 'sources.list.d'));
    for (const [name, text] of Object.entries(files)) await writeFile(path.join(apt, name), text);
    const { stdout } = await run('bash', [SCRIPT, apt], { env: { ...process.env, OS_CODENAME: codename } });
    return Object.fromEntries(
      stdout
        .trim()
        .split('\n')
        .map((line) => line.split(': ') as [string, string]),
    );
  } finally {
    await rm(apt, { recursive: true, force: true });
  }
}

describe('set-up: the deb-src entry comes from the machine’s own apt sources', () => {
  it('takes the URI and keyring of the deb822 entry serving the release, not its security suite', async () => {
    const entry = await derive({
      'sources.list.d/debian.sources': [
        '# the security archive first, to be passed over',
        'Types: deb',
        'URIs: http://mirror.internal/debian-security',
        'Suites: bookworm-security',
        'Components: main',
        '',
        'Types: deb',
        'URIs: http://mirror.internal/debian http://second.internal/debian',
        'Suites: bookworm bookworm-updates',
        'Components: main',
        'Signed-By: /etc/apt/keyrings/mirror.gpg',
        '',
      ].join('\n'),
    });
    expect(entry).to.deep.equal({
      Types: 'deb-src',
      URIs: 'http://mirror.internal/debian',
      Suites: 'trixie',
      Components: 'main',
      'Signed-By': '/etc/apt/keyrings/mirror.gpg',
    });
  });

  it('reads one-line sources.list entries with their options, and skips disabled and own entries', async () => {
    const entry = await derive({
      'sources.list': [
        '# deb http://commented.out/debian bookworm main',
        'deb-src http://sources.only/debian bookworm main',
        'deb [arch=amd64 signed-by=/usr/share/keyrings/corp.gpg] https://corp.mirror/debian bookworm main contrib',
      ].join('\n'),
      'sources.list.d/off.sources': 'Types: deb\nURIs: http://disabled/debian\nSuites: bookworm\nEnabled: no\n',
      'sources.list.d/weft-trixie-src.sources': 'Types: deb\nURIs: http://own/debian\nSuites: bookworm\n',
    });
    expect(entry.URIs).to.equal('https://corp.mirror/debian');
    expect(entry['Signed-By']).to.equal('/usr/share/keyrings/corp.gpg');
  });

  it('falls back to Debian’s archive keyring, and fails plainly when nothing serves the release', async () => {
    const entry = await derive({ 'sources.list': 'deb http://plain.mirror/debian bookworm main\n' });
    expect(entry['Signed-By']).to.equal('/usr/share/keyrings/debian-archive-keyring.gpg');
    const failure = await derive({ 'sources.list': 'deb http://plain.mirror/debian bullseye main\n' }).catch(
      (error: { code: number; stderr: string }) => error,
    );
    expect(failure).to.deep.include({ code: 1 });
    expect((failure as { stderr: string }).stderr).to.contain('no apt source serves bookworm');
  });
});
