#!/usr/bin/env bash
# architecture-figure.sh draws the architecture figure of
# docs/architecture.md again (docs/img/architecture.svg) from its data in
# internal/archfig, after an edit there: it runs the package's golden test
# with -update, which renders the figure, checks its layout (text fits its
# boxes, no label on a line or a box) and writes it. Commit the figure it
# writes; TestArchitectureSVG fails while the two differ. A second or two.
#
# Usage: scripts/architecture-figure.sh
set -euo pipefail
cd "$(dirname "$0")/.."
go test ./internal/archfig -run '^TestArchitectureSVG$' -update
go test ./internal/archfig
echo "architecture-figure: wrote docs/img/architecture.svg ($(wc -c < docs/img/architecture.svg) bytes)"
