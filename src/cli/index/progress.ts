/** A one-line progress bar on stderr (redrawn in place on a terminal, one line per phase otherwise). */
export function createProgress(stream: NodeJS.WriteStream) {
  const WIDTH = 30;
  let label = '';
  let total = 0;
  let done = 0;
  let lastDraw = 0;
  const draw = (force = false) => {
    const now = Date.now();
    if (!stream.isTTY || (!force && now - lastDraw < 100)) return;
    lastDraw = now;
    const filled = total === 0 ? WIDTH : Math.round((done / total) * WIDTH);
    stream.write(`\r${label.padEnd(8)} [${'#'.repeat(filled)}${'.'.repeat(WIDTH - filled)}] ${done}/${total}`);
  };
  const finishLine = () => {
    if (!label) return;
    if (stream.isTTY) {
      draw(true);
      stream.write('\n');
    } else stream.write(`${label}: ${done}/${total}\n`);
  };
  return {
    phase(name: string, count: number) {
      finishLine();
      label = name;
      total = count;
      done = 0;
      draw(true);
    },
    tick() {
      done += 1;
      draw();
    },
    done() {
      finishLine();
      label = '';
    },
  };
}
