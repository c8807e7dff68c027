package scheduler

// WithAdmitLaneCap returns cfg with admission lanes of n runs each.
func WithAdmitLaneCap(cfg Config, n int) Config {
	cfg.admitLaneCap = n
	return cfg
}

// WithUnplanBatch returns cfg with a sweep of missed fires that reads n
// planned fires a step.
func WithUnplanBatch(cfg Config, n int) Config {
	cfg.unplanBatch = n
	return cfg
}

// WithMaxPlannedAhead returns cfg with PlanDue transactions that plan at
// most n fires past the lookahead (and one task's plan).
func WithMaxPlannedAhead(cfg Config, n int) Config {
	cfg.maxPlannedAhead = n
	return cfg
}

// MaxPlannedAhead is maxPlannedAhead.
const MaxPlannedAhead = maxPlannedAhead
