/**
 * `npm run lint`'s line-length step: Biome keeps code within 120 columns but cannot break string
 * literals, so this lists every tracked .ts line longer than 120 characters and fails if any.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { isGenerated } from './generated';

const MAX = 120;
const root = path.resolve(__dirname, '..');
const files = execFileSync('git', ['ls-files', '-z', '*.ts'], { cwd: root, encoding: 'utf8' })
  .split('\0')
  .filter((f) => f !== '');
let over = 0;
for (const file of files) {
  const text = readFileSync(path.join(root, file), 'utf8');
  // A generated file's lines are its source's text (the client's, the OpenAPI document's).
  if (isGenerated(text)) continue;
  const lines = text.split('\n');
  lines.forEach((line, i) => {
    const length = line.replace(/\r$/, '').length;
    if (length > MAX) {
      over++;
      console.log(`${file}:${i + 1}:${length}`);
    }
  });
}
if (over > 0) {
  console.error(`${over} line(s) longer than ${MAX} characters`);
  process.exitCode = 1;
}
