"""Image and audio preprocessing in the graph, equal to the libraries people use (issue 17)."""
