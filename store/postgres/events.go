package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sundialhq/sundial"
)

// The live events of the cluster travel by NOTIFY, which writes no row:
// each node sends its own events to a channel of its schema, and every
// node, itself included, LISTENs on a connection of its own. PostgreSQL
// delivers the notifications to every listener in the order their
// transactions committed, so every node holds the cluster's events in one
// order, and a client resumes after an event on any node exactly.
//
// Every node hears and decodes every notification: the relay is a
// sundial.EventDemandRelay, and the nodes send their events only while a
// node has a stream open, which it announces on the same channel (see
// package event, demand.go). An announce's payload is a JSON object
// ({"interest": ...}), an events' a JSON array.

// Bounds of the relay.
const (
	// maxPayload is the largest payload of one NOTIFY: the server's limit
	// is 8000 bytes.
	maxPayload = 7900
	// listenCheck is how long the listening connection waits for a
	// notification before it checks that the server still answers, so
	// that a connection cut without a word is found.
	listenCheck = 15 * time.Second
	// relistenMax bounds the wait between two attempts to listen again.
	relistenMax = 5 * time.Second
)

// EventRelay returns the relay of the live events of the nodes on this
// database (see sundial.EventRelay): NOTIFY on a channel of the schema,
// LISTEN on a connection of its own, opened with the store's settings or
// Options.ListenDSN's (a pooler in transaction mode, which LISTEN needs a
// session of, will not do).
// The relay is a sundial.EventDemandRelay.
func (s *Store) EventRelay() sundial.EventRelay { return &relay{s: s} }

var _ sundial.EventDemandRelay = (*relay)(nil)

type relay struct {
	s *Store

	mu      sync.Mutex
	channel string // found once: see channelName

	// sent holds this node's notifications not heard back yet, by
	// payload, with their events: when one comes back, its events are
	// delivered as they are, not decoded again. A payload names events
	// no other node's can (their IDs), so one that comes back the same
	// was sent from here.
	sentMu    sync.Mutex
	sent      map[string]sentPayload
	sentSwept time.Time
}

// sentPayload is a notification this node sent: its events, and when.
type sentPayload struct {
	evs []sundial.Event
	at  time.Time
}

// sentKeep is how long the relay waits for its own notification to come
// back before it forgets it (the listening connection was lost); one that
// comes later is decoded as another node's would be.
const sentKeep = time.Minute

// maxSent bounds the notifications the relay waits to hear back (a few
// megabytes); past it, those sent are decoded when they come back.
const maxSent = 1000

// channelName is the channel of the schema the store works in: one for
// every node of a cluster, apart from the clusters in other schemas or
// databases of the same server.
func (r *relay) channelName(ctx context.Context) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.channel != "" {
		return r.channel, nil
	}
	var db, schema string
	if err := r.s.pool.QueryRow(ctx, `SELECT current_database(), current_schema()`).Scan(&db, &schema); err != nil {
		return "", fmt.Errorf("find the schema of the events channel: %w", err)
	}
	sum := sha256.Sum256([]byte(db + "\x00" + schema))
	r.channel = "sundial_events_" + hex.EncodeToString(sum[:8])
	return r.channel, nil
}

// payload is one notification: a JSON array of events.
type payload struct {
	text string
	evs  []sundial.Event // a copy of those in text
}

// payloads encodes evs as JSON arrays of at most maxPayload bytes each, in
// order. An event that alone is larger (none is: its texts are bounded)
// is left out, as is one that does not encode (a time past year 9999).
func payloads(evs []sundial.Event) []payload {
	var (
		out  []payload
		cur  = append(make([]byte, 0, maxPayload), '[')
		ev   []byte                               // one event's JSON
		held = make([]sundial.Event, 0, len(evs)) // the copies of every payload's events
		from int                                  // where the current payload's are in held
	)
	flush := func() {
		cur[len(cur)-1] = ']'
		out = append(out, payload{text: string(cur), evs: held[from:len(held):len(held)]})
		cur, from = cur[:1], len(held)
	}
	for i := range evs {
		var err error
		ev, err = evs[i].AppendJSON(ev[:0])
		if err != nil || len(ev)+2 > maxPayload {
			continue
		}
		if len(cur)+len(ev)+1 > maxPayload {
			flush()
		}
		cur = append(append(cur, ev...), ',')
		held = append(held, evs[i])
	}
	if len(cur) > 1 {
		flush()
	}
	return out
}

// remember holds ps as sent now (up to maxSent in all), and forgets
// those sent longer than sentKeep ago (looked for every sentKeep at most).
func (r *relay) remember(ps []payload, now time.Time) {
	r.sentMu.Lock()
	defer r.sentMu.Unlock()
	if r.sent == nil {
		r.sent = make(map[string]sentPayload)
	}
	if now.Sub(r.sentSwept) >= sentKeep {
		for text, p := range r.sent {
			if now.Sub(p.at) >= sentKeep {
				delete(r.sent, text)
			}
		}
		r.sentSwept = now
	}
	for _, p := range ps {
		if len(r.sent) < maxSent {
			r.sent[p.text] = sentPayload{evs: p.evs, at: now}
		}
	}
}

// heard returns the events of a notification this node sent, and forgets
// it; ok is false for another node's.
func (r *relay) heard(text string) (evs []sundial.Event, ok bool) {
	r.sentMu.Lock()
	defer r.sentMu.Unlock()
	p, ok := r.sent[text]
	if ok {
		delete(r.sent, text)
	}
	return p.evs, ok
}

// Publish sends evs to every node in one round trip: a NOTIFY per payload.
func (r *relay) Publish(ctx context.Context, evs []sundial.Event) (err error) {
	defer r.s.classify(&err)
	channel, err := r.channelName(ctx)
	if err != nil {
		return err
	}
	ps := payloads(evs)
	if len(ps) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	for _, p := range ps {
		b.Queue(`SELECT pg_notify($1, $2)`, channel, p.text)
	}
	// Before they are sent: a notification may come back before
	// sendBatch returns.
	r.remember(ps, time.Now())
	if err := sendBatch(ctx, r.s.pool, b); err != nil {
		return fmt.Errorf("notify events: %w", err)
	}
	return nil
}

// control is the payload of a notification that carries no events: an
// interest (Announce).
type control struct {
	Interest *sundial.EventInterest `json:"interest,omitempty"`
	Dropped  *dropped               `json:"dropped,omitempty"`
}

// dropped is the payload of Dropped: the node that dropped events it
// kept, and from when.
type dropped struct {
	Node string    `json:"node"`
	From time.Time `json:"from"`
}

// Dropped tells every node that node dropped events it kept, made from
// on: one NOTIFY, which Listen delivers to sink.Lost.
func (r *relay) Dropped(ctx context.Context, node string, from time.Time) error {
	return r.notice(ctx, control{Dropped: &dropped{Node: node, From: from}})
}

// Announce tells every node that in.Node has streams of the events open:
// one NOTIFY, which Listen delivers to sink.Interest.
func (r *relay) Announce(ctx context.Context, in sundial.EventInterest) error {
	return r.notice(ctx, control{Interest: &in})
}

// notice sends c to every node: one NOTIFY on the events channel.
func (r *relay) notice(ctx context.Context, c control) (err error) {
	defer r.s.classify(&err)
	channel, err := r.channelName(ctx)
	if err != nil {
		return err
	}
	text, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("encode a notice of the live events: %w", err)
	}
	if _, err := r.s.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, channel, string(text)); err != nil {
		return fmt.Errorf("notify a notice of the live events: %w", err)
	}
	return nil
}

// Listen listens on the channel until ctx is done, delivering each
// notification's events. When its connection is lost it says so
// (sink.Lost: what was sent meanwhile is not delivered) and listens again
// on a new one.
func (r *relay) Listen(ctx context.Context, sink sundial.EventSink) error {
	var ready sync.Once
	wait := 100 * time.Millisecond
	for {
		listened, err := r.listen(ctx, sink, func() { ready.Do(sink.Ready) })
		if ctx.Err() != nil {
			return nil
		}
		if listened {
			wait = 100 * time.Millisecond
		}
		r.s.log.Warn("live events: listening again", "component", "events", "err", err)
		sink.Lost("the connection to the database that brings the cluster's events was lost")
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		wait = min(2*wait, relistenMax)
	}
}

// listen opens a connection, listens on it and delivers what comes until
// the connection fails or ctx is done; listened says whether it got as far
// as listening.
func (r *relay) listen(ctx context.Context, sink sundial.EventSink, ready func()) (listened bool, err error) {
	channel, err := r.channelName(ctx)
	if err != nil {
		return false, err
	}
	conn, err := pgx.ConnectConfig(ctx, r.s.listen.Copy())
	if err != nil {
		return false, err
	}
	defer func() {
		closing, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = conn.Close(closing)
	}()
	if _, err := conn.Exec(ctx, `LISTEN `+channel); err != nil {
		return false, err
	}
	ready()
	for {
		waitCtx, cancel := context.WithTimeout(ctx, listenCheck)
		n, err := conn.WaitForNotification(waitCtx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return true, nil
		case errors.Is(err, context.DeadlineExceeded):
			// Nothing came: does the server still answer?
			check, cancel := context.WithTimeout(ctx, listenCheck)
			err = conn.Ping(check)
			cancel()
			if err != nil {
				return true, err
			}
			continue
		case err != nil:
			return true, err
		}
		if strings.HasPrefix(n.Payload, "{") {
			var c control
			err := json.Unmarshal([]byte(n.Payload), &c)
			switch {
			case err != nil:
				r.s.log.Error("live events: a notification that is not understood", "component", "events", "err", err)
			case c.Interest != nil:
				if sink.Interest != nil {
					sink.Interest(*c.Interest)
				}
			case c.Dropped != nil:
				if sink.Lost != nil {
					sink.Lost(fmt.Sprintf("node %s dropped live events it kept from %s on before a stream asked for them",
						c.Dropped.Node, c.Dropped.From.UTC().Format(time.RFC3339Nano)))
				}
			default:
				// A notice of a newer version's: nothing for this one.
				r.s.log.Debug("live events: a notice this version does not know", "component", "events")
			}
			continue
		}
		evs, ok := r.heard(n.Payload)
		if !ok {
			if err := json.Unmarshal([]byte(n.Payload), &evs); err != nil {
				r.s.log.Error("live events: a notification that is not events", "component", "events", "err", err)
				continue
			}
		}
		sink.Deliver(evs)
	}
}
