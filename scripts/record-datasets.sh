#!/usr/bin/env bash
# record-datasets.sh measures the committed validation datasets again,
# every one in rounds (each configuration once a round, each round in a
# fresh random order, every record naming its round), and replaces the
# committed files with the new recordings. The accuracy tests read their
# thresholds from the data (its rounds' noise floor), so a change that
# moves step times or memory peaks (a kernel, a fused op) regenerates the
# datasets with this script and commits them in the same change.
#
# Usage: scripts/record-datasets.sh [NAME…]
#   NAME: validation, schedules, vshape, large, straggler, transformer,
#   replicas, mpi
#   (default: all but mpi when mpirun or the mpi build's libraries are
#   missing)
#
# It takes the machine for minutes to tens of minutes per dataset on two
# cores (each generator's doc comment estimates its own; the script prints
# what each took): run it on a machine quiet but for it. Each dataset is written to FILE.new first and
# moved over FILE only when its recording finished.
set -euo pipefail
cd "$(dirname "$0")/.."

declare -A env=(
	[validation]=PIPECAST_GENERATE_VALIDATION
	[schedules]=PIPECAST_GENERATE_SCHEDULES
	[vshape]=PIPECAST_GENERATE_VSHAPE
	[large]=PIPECAST_GENERATE_LARGE_VALIDATION
	[straggler]=PIPECAST_GENERATE_STRAGGLER
	[transformer]=PIPECAST_GENERATE_TRANSFORMER
	[replicas]=PIPECAST_GENERATE_REPLICAS
	[mpi]=PIPECAST_GENERATE_MPI_VALIDATION
)
declare -A test=(
	[validation]=TestGenerateValidationDataset
	[schedules]=TestGenerateScheduleDataset
	[vshape]=TestGenerateVShapeDataset
	[large]=TestGenerateLargeDataset
	[straggler]=TestGenerateStragglerDataset
	[transformer]=TestGenerateTransformerDataset
	[replicas]=TestGenerateReplicasDataset
	[mpi]=TestGenerateMPIValidationDataset
)
declare -A file=(
	[validation]=predictor/testdata/validation_runs.jsonl
	[schedules]=predictor/testdata/schedules_validation_runs.jsonl
	[vshape]=predictor/testdata/vshape_validation_runs.jsonl
	[large]=predictor/testdata/large_validation_runs.jsonl
	[straggler]=predictor/testdata/straggler_runs.jsonl
	[transformer]=predictor/testdata/transformer_validation_runs.jsonl
	[replicas]=predictor/testdata/replicas_validation_runs.jsonl
	[mpi]=predictor/testdata/mpi_validation_runs.jsonl
)

have_mpi() { command -v mpirun >/dev/null && pkg-config --exists ompi-c 2>/dev/null; }

names=("$@")
if [[ ${#names[@]} -eq 0 ]]; then
	names=(validation schedules vshape large straggler transformer replicas)
	if have_mpi; then
		names+=(mpi)
	else
		echo "record-datasets: skipping mpi: needs mpirun and Open MPI's libraries (openmpi-bin, libopenmpi-dev)" >&2
	fi
fi
for n in "${names[@]}"; do
	if [[ -z "${env[$n]:-}" ]]; then
		echo "record-datasets: unknown dataset \"$n\" (want validation, schedules, vshape, large, straggler, transformer, replicas or mpi)" >&2
		exit 2
	fi
	if [[ "$n" == mpi ]] && ! have_mpi; then
		echo "record-datasets: mpi needs mpirun and Open MPI's libraries (openmpi-bin, libopenmpi-dev)" >&2
		exit 2
	fi
done

for n in "${names[@]}"; do
	tags=()
	[[ "$n" == mpi ]] && tags=(-tags mpi)
	echo "== $n → ${file[$n]}"
	start=$(date +%s)
	log=$(mktemp)
	if ! env "${env[$n]}=1" go test "${tags[@]}" ./predictor -run "^${test[$n]}\$" -count=1 -v -timeout 3h >"$log" 2>&1; then
		tail -n 20 "$log" >&2
		echo "record-datasets: $n: the recording failed; ${file[$n]} is unchanged (the partial one is ${file[$n]}.new)" >&2
		exit 1
	fi
	grep -E ' in [0-9]+ s' "$log" || true
	rm -f "$log"
	if [[ ! -s "${file[$n]}.new" ]]; then
		echo "record-datasets: $n: no recording was written" >&2
		exit 1
	fi
	mv "${file[$n]}.new" "${file[$n]}"
	echo "$n: $(wc -l <"${file[$n]}") records in $(($(date +%s) - start)) s"
done
echo "now run: go test ./predictor -run Accuracy -v"
