package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// cliCalendar is a calendar as the API answers it.
type cliCalendar struct {
	Name        string    `json:"name"`
	Description string    `json:"description"`
	Timezone    string    `json:"timezone"`
	Entries     []string  `json:"entries"`
	Version     int64     `json:"version"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// calendarPath is the API path of the calendar name.
func calendarPath(name string) string { return "/api/v1/calendars/" + url.PathEscape(name) }

// calendarCommand is "sundial calendar".
func (c *cli) calendarCommand() *cobra.Command {
	cmd := groupCommand("calendar", "List and change calendars, the days tasks do not fire on",
		`A calendar is a named list of days (dates, ranges of dates, cron expressions that pick
days) that tasks reference with "calendars": a fire on one of its days is recorded SKIPPED
with reason CALENDAR. See docs/api.md, "Calendars".`)
	cmd.AddCommand(c.calendarLsCommand(), c.calendarAddCommand(), c.calendarRmCommand())
	return cmd
}

func (c *cli) calendarLsCommand() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:     "ls [NAME]",
		Aliases: []string{"list", "get"},
		Short:   "List the calendars, or one calendar's entries",
		Example: `  sundial calendar ls
  sundial calendar ls us-holidays`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageErrorf("calendar ls: want at most one calendar's name, got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(out, "table", "json", "yaml", "name"); err != nil {
				return err
			}
			a, err := c.client()
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			var raws []json.RawMessage
			if len(args) == 1 {
				var raw json.RawMessage
				if err := a.do(cmd.Context(), http.MethodGet, calendarPath(args[0]), nil, nil, &raw); err != nil {
					return err
				}
				raws = append(raws, raw)
			} else {
				var page struct {
					Items []json.RawMessage `json:"items"`
				}
				if err := a.do(cmd.Context(), http.MethodGet, "/api/v1/calendars", nil, nil, &page); err != nil {
					return err
				}
				raws = page.Items
			}
			switch out {
			case "json":
				if len(args) == 1 {
					return writeJSON(w, raws[0])
				}
				return writeJSON(w, raws)
			case "yaml":
				return writeYAML(w, raws...)
			}
			rows := [][]string{}
			for _, raw := range raws {
				var cal cliCalendar
				if err := json.Unmarshal(raw, &cal); err != nil {
					return err
				}
				if out == "name" {
					fmt.Fprintln(w, "calendar/"+cal.Name)
					continue
				}
				tz := cal.Timezone
				if tz == "" {
					tz = "(task's)"
				}
				if len(args) == 1 {
					for _, e := range cal.Entries {
						rows = append(rows, []string{e})
					}
					fmt.Fprintf(w, "calendar/%s  %s  version %d  %s\n", cal.Name, tz, cal.Version, cal.Description)
					continue
				}
				rows = append(rows, []string{cal.Name, tz, strconv.Itoa(len(cal.Entries)), strconv.FormatInt(cal.Version, 10),
					ago(cal.UpdatedAt, c.now()), cal.Description})
			}
			switch {
			case out == "name":
				return nil
			case len(args) == 1:
				return writeTable(w, []string{"ENTRY"}, rows)
			}
			return writeTable(w, []string{"NAME", "TZ", "ENTRIES", "VERSION", "UPDATED", "DESCRIPTION"}, rows)
		},
	}
	addOutputFlag(cmd, &out, "table", "table", "json", "yaml", "name")
	return cmd
}

func (c *cli) calendarAddCommand() *cobra.Command {
	var tz, description string
	cmd := &cobra.Command{
		Use:   "add NAME [ENTRY...] [--timezone TZ] [--description TEXT]",
		Short: "Create a calendar, or add entries to one (and set its zone or description)",
		Long: `Create the calendar NAME with the entries given, or, if it exists, add them to its
entries (an entry it has already is kept once) and set --timezone and --description when
given. An entry is a date (2026-12-25), a range of dates, both included
(2026-12-24..2026-12-31), or a cron expression standing for the days it fires on
("0 0 0 ? 11 THU#4", quoted as one argument). The change is made at the version read: if
the calendar changed meanwhile, nothing is changed (409).`,
		Example: `  sundial calendar add us-holidays 2026-07-03 2026-12-24..2026-12-31 "0 0 0 ? 11 THU#4" --timezone America/New_York
  sundial calendar add weekends "0 0 0 * * SAT,SUN"`,
		Args: minArgs("the calendar's name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := c.client()
			if err != nil {
				return err
			}
			name, entries := args[0], args[1:]
			var cur cliCalendar
			err = a.do(cmd.Context(), http.MethodGet, calendarPath(name), nil, nil, &cur)
			switch {
			case notFound(err):
				body := map[string]any{"name": name, "entries": entries, "timezone": tz, "description": description}
				if err := a.do(cmd.Context(), http.MethodPost, "/api/v1/calendars", nil, body, &cur); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "calendar/%s created with %d entries\n", cur.Name, len(cur.Entries))
				return nil
			case err != nil:
				return err
			}
			for _, e := range entries {
				if !slices.Contains(cur.Entries, e) {
					cur.Entries = append(cur.Entries, e)
				}
			}
			if cmd.Flags().Changed("timezone") {
				cur.Timezone = tz
			}
			if cmd.Flags().Changed("description") {
				cur.Description = description
			}
			return c.putCalendar(cmd, a, &cur)
		},
	}
	cmd.Flags().StringVar(&tz, "timezone", "", `the IANA zone whose dates the entries name ("" for the zone of each task)`)
	cmd.Flags().StringVar(&description, "description", "", "what the calendar is for")
	return cmd
}

func (c *cli) calendarRmCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "rm NAME [ENTRY...]",
		Short: "Delete a calendar no task references, or remove entries from one",
		Long: `Without entries, delete the calendar NAME; while tasks reference it, nothing is deleted
and the error names them. With entries, remove those entries from it (each must be one of
its entries, as "calendar ls NAME" shows them), at the version read.`,
		Example: `  sundial calendar rm us-holidays 2026-07-03
  sundial calendar rm weekends`,
		Aliases: []string{"delete"},
		Args:    minArgs("the calendar's name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := c.client()
			if err != nil {
				return err
			}
			name, entries := args[0], args[1:]
			if len(entries) == 0 {
				if err := a.do(cmd.Context(), http.MethodDelete, calendarPath(name), nil, nil, nil); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "calendar/%s deleted\n", name)
				return nil
			}
			var cur cliCalendar
			if err := a.do(cmd.Context(), http.MethodGet, calendarPath(name), nil, nil, &cur); err != nil {
				return err
			}
			for _, e := range entries {
				i := slices.Index(cur.Entries, e)
				if i < 0 {
					return fmt.Errorf("calendar %s has no entry %q (it has: %s)", name, e, strings.Join(cur.Entries, ", "))
				}
				cur.Entries = slices.Delete(cur.Entries, i, i+1)
			}
			return c.putCalendar(cmd, a, &cur)
		},
	}
}

// putCalendar writes cal back at the version it was read at, and says so.
func (c *cli) putCalendar(cmd *cobra.Command, a *apiClient, cal *cliCalendar) error {
	body := map[string]any{"entries": cal.Entries, "timezone": cal.Timezone, "description": cal.Description, "version": cal.Version}
	if err := a.do(cmd.Context(), http.MethodPut, calendarPath(cal.Name), nil, body, cal); err != nil {
		return err
	}
	_, err := fmt.Fprintf(cmd.OutOrStdout(), "calendar/%s changed: %d entries (version %d)\n", cal.Name, len(cal.Entries), cal.Version)
	return err
}
