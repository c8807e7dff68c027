package cron

import (
	"fmt"
	"strconv"
	"strings"
)

var (
	monthWords = [...]string{"", "January", "February", "March", "April", "May", "June",
		"July", "August", "September", "October", "November", "December"}
	dayWords = [...]string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}
	ordinals = [...]string{"", "first", "second", "third", "fourth", "fifth"}
)

// Explain describes the schedule in plain English, for example
// "At 09:30:00, Monday through Friday" or "Every 15 seconds".
func (s *Schedule) Explain() string {
	if s.every > 0 {
		return "Every " + spellDuration(s.expr[len("@every "):]) +
			", counted from when the schedule starts"
	}
	f := strings.Fields(s.expr)
	parts := []string{explainTime(f[second], f[minute], f[hour])}
	if d := explainDays(f[dayOfMonth], f[dayOfWeek], s.domStar, s.dowStar); d != "" {
		parts = append(parts, d)
	}
	if f[month] != "*" {
		parts = append(parts, "in "+explainList(month, f[month]))
	}
	if len(f) == 7 && f[year] != "*" {
		parts = append(parts, "in "+explainList(year, f[year]))
	}
	out := strings.Join(parts, ", ")
	return strings.ToUpper(out[:1]) + out[1:]
}

// spellDuration words a canonical duration such as "1h30m".
func spellDuration(short string) string {
	var words []string
	num := ""
	for _, r := range short {
		if r >= '0' && r <= '9' {
			num += string(r)
			continue
		}
		unit := map[rune]string{'h': "hour", 'm': "minute", 's': "second"}[r]
		if num != "1" {
			unit += "s"
		}
		words = append(words, num+" "+unit)
		num = ""
	}
	return strings.Join(words, " ")
}

// explainTime describes the second, minute and hour fields.
func explainTime(sec, min, hr string) string {
	secN, secOK := single(sec)
	minN, minOK := single(min)
	hourN, hourOK := single(hr)
	switch {
	case secOK && minOK && hourOK && secN == 0:
		return fmt.Sprintf("at %02d:%02d", hourN, minN)
	case secOK && minOK && hourOK:
		return fmt.Sprintf("at %02d:%02d:%02d", hourN, minN, secN)
	case sec == "0" && min == "0" && hr == "*":
		return "at the start of every hour"
	case sec == "0" && minOK && hr == "*":
		return fmt.Sprintf("at minute %d of every hour", minN)
	}
	var parts []string
	if sec != "0" {
		parts = append(parts, unitPhrase(second, sec))
	}
	if min != "*" {
		parts = append(parts, unitPhrase(minute, min))
	} else if sec == "0" {
		parts = append(parts, "every minute")
	}
	if hr != "*" {
		parts = append(parts, unitPhrase(hour, hr))
	}
	return strings.Join(parts, ", ")
}

// unitPhrase words one of the time fields: "every 15 minutes", "at second
// 30", "in hours 9 through 17".
func unitPhrase(k fieldKind, text string) string {
	unit := fieldNames[k]
	if text == "*" {
		return "every " + unit
	}
	if base, step, ok := strings.Cut(text, "/"); ok && !strings.Contains(text, ",") {
		p := "every " + step + " " + unit + "s"
		if step == "1" {
			p = "every " + unit
		}
		switch {
		case base == "*":
			return p
		case strings.Contains(base, "-"):
			lo, hi, _ := strings.Cut(base, "-")
			return p + " from " + unit + " " + lo + " through " + hi
		default:
			return p + " starting at " + unit + " " + base
		}
	}
	if strings.ContainsAny(text, ",-") {
		unit += "s"
	}
	prep := "at "
	if k == hour {
		prep = "in "
	}
	return prep + unit + " " + explainList(k, text)
}

func explainDays(dom, dow string, domStar, dowStar bool) string {
	var parts []string
	if !domStar {
		parts = append(parts, explainDOM(dom))
	}
	if !dowStar {
		parts = append(parts, explainDOW(dow))
	}
	return strings.Join(parts, " or ")
}

func explainDOM(text string) string {
	var days, items []string
	for item := range strings.SplitSeq(text, ",") {
		switch {
		case item == "L":
			items = append(items, "on the last day of the month")
		case item == "LW":
			items = append(items, "on the last weekday of the month")
		case strings.HasPrefix(item, "L-"):
			items = append(items, item[2:]+" days before the last day of the month")
		case strings.HasSuffix(item, "W"):
			items = append(items, "on the weekday nearest day "+item[:len(item)-1]+" of the month")
		default:
			days = append(days, explainList(dayOfMonth, item))
		}
	}
	if len(days) > 0 {
		unit := "day "
		if len(days) > 1 || strings.ContainsAny(text, "-/") {
			unit = "days "
		}
		items = append([]string{"on " + unit + joinWords(days) + " of the month"}, items...)
	}
	return joinWords(items)
}

func explainDOW(text string) string {
	var items []string
	for item := range strings.SplitSeq(text, ",") {
		switch {
		case strings.Contains(item, "#"):
			d, k, _ := strings.Cut(item, "#")
			n, _ := strconv.Atoi(k)
			items = append(items, "the "+ordinals[n]+" "+word(dayOfWeek, d)+" of the month")
		case strings.HasSuffix(item, "L"):
			items = append(items, "the last "+word(dayOfWeek, item[:len(item)-1])+" of the month")
		default:
			items = append(items, explainList(dayOfWeek, item))
		}
	}
	return "on " + joinWords(items)
}

// explainList words a list of values, ranges and steps.
func explainList(k fieldKind, text string) string {
	var items []string
	for item := range strings.SplitSeq(text, ",") {
		base, step, hasStep := strings.Cut(item, "/")
		lo, hi, isRange := strings.Cut(base, "-")
		var w string
		switch {
		case base == "*" || base == "?":
			w = "every " + fieldNames[k]
		case isRange:
			w = word(k, lo) + " through " + word(k, hi)
		case hasStep:
			w = word(k, lo) + " onwards"
		default:
			w = word(k, lo)
		}
		if hasStep {
			w += " (every " + step + ")"
		}
		items = append(items, w)
	}
	return joinWords(items)
}

func word(k fieldKind, text string) string {
	v, err := value(k, text)
	if err != nil {
		return text
	}
	switch k {
	case month:
		return monthWords[v]
	case dayOfWeek:
		return dayWords[v]
	}
	return strconv.Itoa(v)
}

func single(text string) (int, bool) {
	n, err := number(text)
	return n, err == nil
}

func joinWords(items []string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}
