// Package cpucache reads the sizes of the CPU's data caches, and how many
// logical CPUs share each, from Linux's sysfs. The CPU backend sizes its
// matrix products' blocking from them; the benchmark commands print them
// beside their figures. Elsewhere, or where sysfs says nothing, it
// reports no caches and callers fall back to their defaults.
package cpucache
