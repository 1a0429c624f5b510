// A kafkajs producer for the stack tests (tests/harness/polyglot.py): its settings in the JSON file named by
// $KH_CLIENT_CONFIG (never argv), `rate` records/s of `recordBytes` bytes to `topic`, in one of two styles:
//   "await-each": one awaited send() per record, as a service handling one request at a time does (one record a
//                 produce request: the habit issue 28's search-nodejs-api had);
//   "batch":      every 100 ms one send() of the records due (kafkajs' own way to batch: it has no linger).
// Stops, flushing nothing further, when its stdin closes. Prints "acked=N" lines to stdout every second.
const fs = require('fs');
const { Kafka, logLevel } = require('kafkajs');

const cfg = JSON.parse(fs.readFileSync(process.env.KH_CLIENT_CONFIG, 'utf8'));
const kafka = new Kafka({ clientId: cfg.clientId, brokers: cfg.brokers, logLevel: logLevel.WARN });
const producer = kafka.producer();
const value = Buffer.alloc(cfg.recordBytes, 'x');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let stop = false;
let acked = 0;
process.stdin.on('end', () => { stop = true; });
process.stdin.on('close', () => { stop = true; });
process.stdin.resume();
const report = setInterval(() => console.log(`acked=${acked}`), 1000);

(async () => {
  await producer.connect();
  const start = Date.now();
  let sent = 0;
  while (!stop) {
    const due = Math.floor(((Date.now() - start) / 1000) * cfg.rate);
    if (cfg.mode === 'await-each') {
      while (sent < due && !stop) {
        await producer.send({ topic: cfg.topic, messages: [{ value }] });
        sent += 1; acked += 1;
      }
      await sleep(2);
    } else {
      if (due > sent) {
        const messages = Array.from({ length: due - sent }, () => ({ value }));
        await producer.send({ topic: cfg.topic, messages });
        acked += messages.length; sent = due;
      }
      await sleep(100);
    }
  }
  clearInterval(report);
  console.log(`acked=${acked}`);
  await producer.disconnect();
  process.exit(0);
})().catch((e) => { console.error(e); process.exit(1); });
