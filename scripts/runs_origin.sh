# runs_origin.sh defines runs_origin, which the table scripts source:
# runs_origin FILE… prints the CPU and the dates the run records of the
# runs.jsonl files were measured on ("AMD EPYC, 2026-12-01", or a range
# of dates), so that a table built from runs reused from an earlier call
# says when they ran, not when it was printed.
runs_origin() {
	local cpu dates
	cpu=$(grep -ho '"cpu_model":"[^"]*"' "$@" | sed 's/^"cpu_model":"//; s/"$//' | sort -u | paste -sd '/' -)
	dates=$(grep -ho '"created_utc":"[0-9-]*' "$@" | sed 's/^"created_utc":"//' | sort -u)
	local first last
	first=$(head -n1 <<<"$dates")
	last=$(tail -n1 <<<"$dates")
	if [[ "$first" == "$last" ]]; then
		echo "${cpu:-an unknown CPU}, $first"
	else
		echo "${cpu:-an unknown CPU}, $first to $last"
	fi
}
