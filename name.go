package sundial

import "strings"

// NearestName returns the name of known that name most likely misspells,
// for a "did you mean" in an error, or "" when none is near: a name that
// differs only in case, is within a small edit distance (a letter added,
// dropped, changed or two swapped; one per three letters, at most three),
// or is the start of exactly one known name ("cron" for "cron_expr").
func NearestName(name string, known []string) string {
	lower := strings.ToLower(name)
	limit := min(max(len([]rune(lower))/3, 1), 3)
	best, bestDist := "", limit+1
	var prefixOf []string
	for _, k := range known {
		if d := editDistance(lower, strings.ToLower(k)); d < bestDist {
			best, bestDist = k, d
		}
		if len(lower) >= 3 && strings.HasPrefix(strings.ToLower(k), lower) {
			prefixOf = append(prefixOf, k)
		}
	}
	if best == "" && len(prefixOf) == 1 {
		best = prefixOf[0]
	}
	return best
}

// editDistance is the optimal string alignment distance of a and b: the
// fewest insertions, deletions, substitutions and swaps of two adjacent
// runes that turn a into b.
func editDistance(a, b string) int {
	s, t := []rune(a), []rune(b)
	// d[i][j] is the distance of s[:i] and t[:j]; three rows suffice.
	prev2 := make([]int, len(t)+1)
	prev := make([]int, len(t)+1)
	cur := make([]int, len(t)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(s); i++ {
		cur[0] = i
		for j := 1; j <= len(t); j++ {
			cost := 1
			if s[i-1] == t[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && s[i-1] == t[j-2] && s[i-2] == t[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(t)]
}

// UnknownName is the message about an unknown name (a field, a key) that
// suggests the nearest known one, if any.
func UnknownName(what, name string, known []string) string {
	msg := "unknown " + what + " \"" + name + "\""
	if near := NearestName(name, known); near != "" {
		msg += "; did you mean \"" + near + "\"?"
	}
	return msg
}

// lowerASCII maps A-Z to a-z and leaves every other rune alone (unlike
// strings.ToLower, which also folds letters of other scripts onto ASCII
// ones: enum values are ASCII words).
func lowerASCII(s string) string {
	return strings.Map(func(r rune) rune {
		if 'A' <= r && r <= 'Z' {
			return r + ('a' - 'A')
		}
		return r
	}, s)
}

// UpperASCII maps a-z to A-Z and leaves every other rune alone: an enum
// value given in any case, normalised.
func UpperASCII(s string) string {
	return strings.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' {
			return r - ('a' - 'A')
		}
		return r
	}, s)
}
