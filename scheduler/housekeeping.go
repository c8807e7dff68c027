package scheduler

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/sundialhq/sundial"
)

// housekeepingStore is what housekeeping needs of the store.
type housekeepingStore interface {
	RunPurge(ctx context.Context, before time.Time, limit int) (int, error)
	NodePrune(ctx context.Context, before time.Time) (int, error)
	RunCancelRequested(ctx context.Context, nodeID string) ([]int64, error)
	AuditPurge(ctx context.Context, before time.Time, limit int) (int, error)
	StatsPurge(ctx context.Context, before time.Time) (int, error)
}

// housekeeping keeps the database small and follows requests made on other
// nodes: every minute it purges run history older than the retention
// period, audit entries older than the audit retention and the nodes'
// counters older than sundial.StatsRetention, and prunes the nodes gone
// for longer than the node retention;
// every half second it stops the calls of this node whose cancellation was
// asked elsewhere.
type housekeeping struct {
	store housekeepingStore
	log   *slog.Logger

	node          string
	retention     time.Duration
	nodeRetention time.Duration
	auditRetain   time.Duration
	cancelPoll    time.Duration
	purged        prometheus.Counter

	// cancel stops a call of this node.
	cancel func(runID int64, cause error) bool
}

func newHousekeeping(cfg Config, store housekeepingStore, log *slog.Logger, purged prometheus.Counter) *housekeeping {
	return &housekeeping{store: store, log: log.With("component", "housekeeping"), node: cfg.Node.ID,
		retention: cfg.Retention, nodeRetention: cfg.NodeRetention, auditRetain: cfg.AuditRetention, cancelPoll: cfg.CancelPoll, purged: purged}
}

// Run purges and polls for cancellations until ctx is done. The two loops
// run apart, so that a long purge does not hold up a cancellation.
func (h *housekeeping) Run(ctx context.Context) error {
	var g errgroup.Group
	g.Go(func() error { return h.purgeLoop(ctx) })
	g.Go(func() error { return h.cancelLoop(ctx) })
	return g.Wait()
}

// purgeLoop every minute deletes run history older than the retention
// period, in small batches so that it never holds the database for long,
// and the nodes gone (LEFT or DEAD) for longer than the node retention.
func (h *housekeeping) purgeLoop(ctx context.Context) error {
	ticker := time.NewTicker(time.Minute)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
		h.purgeRuns(ctx)
		h.purgeAudit(ctx)
		h.purgeStats(ctx)
		h.pruneNodes(ctx)
	}
}

// purgeAudit deletes the audit entries older than the audit retention.
func (h *housekeeping) purgeAudit(ctx context.Context) {
	purgeBatches(ctx, h.log, "purge audit log", h.store.AuditPurge, h.auditRetain, func(n int) {
		if n > 0 {
			h.log.Info("purged audit entries", "entries", n, "audit_retention", h.auditRetain)
		}
	})
}

// purgeStats deletes the nodes' per-minute counters older than
// sundial.StatsRetention.
func (h *housekeeping) purgeStats(ctx context.Context) {
	if _, err := h.store.StatsPurge(ctx, time.Now().Add(-sundial.StatsRetention)); err != nil && ctx.Err() == nil {
		h.log.Error("purge node stats", "err", err)
	}
}

// purgeRuns deletes finished runs older than the retention period.
func (h *housekeeping) purgeRuns(ctx context.Context) {
	purgeBatches(ctx, h.log, "purge run history", h.store.RunPurge, h.retention, func(n int) {
		h.purged.Add(float64(n))
	})
}

// purgeBatches calls purge for what is older than retain, 500 rows at a
// time, until a batch comes back short, handing each count to done; an
// error is logged as what (unless ctx is done) and ends the round.
func purgeBatches(ctx context.Context, log *slog.Logger, what string,
	purge func(ctx context.Context, before time.Time, limit int) (int, error), retain time.Duration, done func(n int)) {
	const batch = 500
	for ctx.Err() == nil {
		n, err := purge(ctx, time.Now().Add(-retain), batch)
		if err != nil {
			if ctx.Err() == nil {
				log.Error(what, "err", err)
			}
			return
		}
		done(n)
		if n < batch {
			return
		}
	}
}

// pruneNodes deletes the nodes whose last heartbeat is older than the node
// retention and that are no longer members, so that GET /api/v1/nodes
// does not list every process that ever ran.
func (h *housekeeping) pruneNodes(ctx context.Context) {
	n, err := h.store.NodePrune(ctx, time.Now().Add(-h.nodeRetention))
	switch {
	case err != nil:
		if ctx.Err() == nil {
			h.log.Error("prune departed nodes", "err", err)
		}
	case n > 0:
		h.log.Info("pruned departed nodes", "nodes", n,
			"node_retention", h.nodeRetention)
	}
}

// cancelLoop stops, within Config.CancelPoll (half a second), the calls of
// this node whose cancellation was asked on another node (POST
// /runs/{id}/cancel, or a CANCEL_PREV admission there).
func (h *housekeeping) cancelLoop(ctx context.Context) error {
	ticker := time.NewTicker(h.cancelPoll)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
		ids, err := h.store.RunCancelRequested(ctx, h.node)
		if err != nil {
			if ctx.Err() == nil {
				h.log.Error("find runs to cancel", "err", err)
			}
			continue
		}
		for _, id := range ids {
			h.cancel(id, errCanceled)
		}
	}
}
