"""Storage backends behind one ``Store`` protocol (see ``base``)."""
