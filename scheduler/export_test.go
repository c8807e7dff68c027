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

// MaxPlannedAhead is maxPlannedAhead.
const MaxPlannedAhead = maxPlannedAhead
