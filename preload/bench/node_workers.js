// SPDX-License-Identifier: MIT
// node_workers.js WORKERS WINDOW DURATION_MS - Node.js worker_threads
// messaging for uepoll-bench's real-node scenario (bench/sc_real_node.c).
// The main thread keeps WINDOW messages in flight to each of WORKERS
// workers for DURATION_MS; each worker answers a number with its double.
// Every message posted wakes the other side's event loop through libuv's
// async handle, an eventfd: that is what uepoll-run replaces.
// Prints one line:
//   ok msgs=N secs=S cpu_us=C ctx=X
// msgs: answers the main thread received while measuring; cpu_us: the
// process's user+system time meanwhile (all threads); ctx: its voluntary
// and involuntary context switches meanwhile.  "bad ..." if an answer's
// sum is wrong (a lost, duplicated or wrong message).
'use strict';
const { Worker, isMainThread, parentPort } = require('worker_threads');

if (!isMainThread) {
  parentPort.on('message', (v) => parentPort.postMessage(2 * v));
} else {
  const nw = Number(process.argv[2] || 2);
  const window = Number(process.argv[3] || 16);
  const durationMs = Number(process.argv[4] || 2000);
  const workers = [];
  let online = 0;
  let sent = 0;
  let got = 0;
  let want = 0;
  let sum = 0;
  let stopping = false;
  let t0, cpu0, ru0;

  const finish = () => {
    const secs = Number(process.hrtime.bigint() - t0) / 1e9;
    const cpu = process.cpuUsage(cpu0);
    const ru = process.resourceUsage();
    const ctx = ru.voluntaryContextSwitches + ru.involuntaryContextSwitches -
      ru0.voluntaryContextSwitches - ru0.involuntaryContextSwitches;
    const ok = sum === want;
    console.log((ok ? 'ok' : 'bad sum ' + sum + ' want ' + want) +
      ' msgs=' + got + ' secs=' + secs.toFixed(6) + ' cpu_us=' +
      (cpu.user + cpu.system) + ' ctx=' + ctx);
    process.exitCode = ok ? 0 : 1;
    for (const w of workers) w.terminate();
  };

  const post = (w) => {
    const v = sent++ % 1000003;
    want += 2 * v;
    w.postMessage(v);
  };

  const start = () => {
    t0 = process.hrtime.bigint();
    cpu0 = process.cpuUsage();
    ru0 = process.resourceUsage();
    setTimeout(() => { stopping = true; }, durationMs);
    for (const w of workers)
      for (let i = 0; i < window; i++) post(w);
  };

  for (let i = 0; i < nw; i++) {
    const w = new Worker(__filename);
    workers.push(w);
    w.on('online', () => { if (++online === nw) start(); });
    w.on('message', (v) => {
      sum += v;
      got++;
      // Keep the window full until the end, then let it drain: every
      // message posted is answered and checked.
      if (!stopping) post(w);
      else if (got === sent) finish();
    });
  }
}
