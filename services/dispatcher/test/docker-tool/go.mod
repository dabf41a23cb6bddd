module toolmesh.dev/dockertool

go 1.22
