// Command printversion prints buildinfo.Version(); TestLinkTimeVersion
// builds it with and without the link-time variable set.
package main

import (
	"fmt"

	"github.com/pipecast/pipecast/internal/buildinfo"
)

func main() { fmt.Println(buildinfo.Version()) }
