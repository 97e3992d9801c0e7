func main() {
	if ok {
		run()
		done()
	}
}
