// A franz-go producer for the stack tests (tests/harness/polyglot.py): its settings in the JSON file named by
// $KH_CLIENT_CONFIG (never argv), Rate records/s of RecordBytes bytes to Topic, on franz-go's defaults, in one of
// two styles: "default" hands every record to Produce (asynchronous: the client batches what is buffered while a
// request is in flight); "sync-each" waits for each record with ProduceSync (one record a produce request).
// Acks (optional): 1 for the leader's acknowledgement alone (idempotent writes off, as franz-go requires for it);
// absent, franz-go's default: every in-sync replica.
// Each record's value is random bytes (franz-go compresses with snappy by default: a repeated byte would shrink to
// nothing, and a producer moving a few hundred bytes a second is not what a real application's records look like).
// Stops when its stdin closes; prints "acked=N" lines every second.
package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

type config struct {
	Brokers     []string `json:"brokers"`
	ClientID    string   `json:"clientId"`
	Topic       string   `json:"topic"`
	Rate        float64  `json:"rate"`
	RecordBytes int      `json:"recordBytes"`
	Mode        string   `json:"mode"`
	Acks        *int     `json:"acks"`
}

func main() {
	raw, err := os.ReadFile(os.Getenv("KH_CLIENT_CONFIG"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var c config
	if err := json.Unmarshal(raw, &c); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	opts := []kgo.Opt{kgo.SeedBrokers(c.Brokers...), kgo.ClientID(c.ClientID), kgo.DefaultProduceTopic(c.Topic)}
	if c.Acks != nil {
		if *c.Acks != 1 {
			fmt.Fprintln(os.Stderr, "acks: only 1 is supported (absent: franz-go's default)")
			os.Exit(2)
		}
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer cl.Close()
	stop := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); close(stop) }()
	var acked atomic.Int64
	go func() {
		for range time.Tick(time.Second) {
			fmt.Printf("acked=%d\n", acked.Load())
		}
	}()
	ctx := context.Background()
	start, sent := time.Now(), 0
	for {
		select {
		case <-stop:
			_ = cl.Flush(ctx)
			fmt.Printf("acked=%d\n", acked.Load())
			return
		default:
		}
		due := int(time.Since(start).Seconds() * c.Rate)
		for ; sent < due; sent++ {
			value := make([]byte, c.RecordBytes)
			_, _ = rand.Read(value)
			r := &kgo.Record{Value: value}
			if c.Mode == "sync-each" {
				if err := cl.ProduceSync(ctx, r).FirstErr(); err == nil {
					acked.Add(1)
				}
			} else {
				cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
					if err == nil {
						acked.Add(1)
					}
				})
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
}
