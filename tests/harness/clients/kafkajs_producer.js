// A kafkajs producer for the stack tests (tests/harness/polyglot.py): its settings in the JSON file named by
// $KH_CLIENT_CONFIG (never argv), `rate` records/s of `recordBytes` bytes to `topic`, in one of two styles:
//   "await-each": one awaited send() per record, as a service handling one request at a time does (one record a
//                 produce request: the habit issue 28's search-nodejs-api had);
//   "batch":      every 100 ms one send() of the records due (kafkajs' own way to batch: it has no linger).
// `acks` (optional): send()'s acks, kafkajs' default -1 (every in-sync replica) when absent. `concurrency`
// (optional, "await-each" only, default 1): that many loops, each awaiting its own send() of one record, as a service
// handling that many requests at a time does (each send() is still one produce request of one record).
// Stops, flushing nothing further, when its stdin closes. Prints "acked=N" lines to stdout every second.
const fs = require('fs');
const { Kafka, logLevel } = require('kafkajs');

const cfg = JSON.parse(fs.readFileSync(process.env.KH_CLIENT_CONFIG, 'utf8'));
const kafka = new Kafka({ clientId: cfg.clientId, brokers: cfg.brokers, logLevel: logLevel.WARN });
const producer = kafka.producer();
const value = Buffer.alloc(cfg.recordBytes, 'x');
const acks = cfg.acks === undefined ? -1 : cfg.acks;
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
      const loop = async () => {
        while (sent < due && !stop) {
          sent += 1;
          await producer.send({ topic: cfg.topic, messages: [{ value }], acks });
          acked += 1;
        }
      };
      await Promise.all(Array.from({ length: cfg.concurrency || 1 }, loop));
      await sleep(2);
    } else {
      if (due > sent) {
        const messages = Array.from({ length: due - sent }, () => ({ value }));
        await producer.send({ topic: cfg.topic, messages, acks });
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
