package sqlrow

import "testing"

func TestClampLimit(t *testing.T) {
	t.Parallel()
	for in, want := range map[int]int{-1: 50, 0: 50, 1: 1, 1000: 1000, 1001: 1000} {
		if got := ClampLimit(in); got != want {
			t.Errorf("ClampLimit(%d) = %d, want %d", in, got, want)
		}
	}
}
