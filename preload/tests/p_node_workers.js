// SPDX-License-Identifier: MIT
// p_node_workers.js - Node.js worker_threads messaging (libuv's async
// handles: an eventfd per event loop, closed with syscall(SYS_close)): four
// workers echo 500 messages each, doubled; the sum is checked.  Run by
// server_test.sh with and without the preload.
'use strict';
const { Worker, isMainThread, parentPort } = require('worker_threads');

if (isMainThread) {
  const n = 500;
  const workers = [];
  let got = 0;
  let sum = 0;
  let want = 0;
  for (let w = 0; w < 4; w++) {
    const wk = new Worker(__filename);
    workers.push(wk);
    wk.on('message', (v) => {
      sum += v;
      got++;
      if (got === 4 * n) {
        console.log(sum === want ? 'ok ' + got : 'bad ' + sum + ' ' + want);
        process.exitCode = sum === want ? 0 : 1;
        for (const x of workers) x.terminate();
      }
    });
  }
  for (let i = 0; i < n; i++) {
    for (let w = 0; w < 4; w++) {
      want += 2 * i;
      workers[w].postMessage(i);
    }
  }
} else {
  parentPort.on('message', (v) => parentPort.postMessage(2 * v));
}
