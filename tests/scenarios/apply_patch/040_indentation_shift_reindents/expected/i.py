if ok:
	if more:
		run(fast=True)
		log()
