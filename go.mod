module github.com/pipecast/pipecast

go 1.26.8
