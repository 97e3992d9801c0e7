if ok:
	if more:
		run()
