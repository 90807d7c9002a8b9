package sandbox

import "strings"

// Read-only word tables for the generated content. They are never modified.

var firstNamesMale = []string{
	"Ștefan", "Andrei", "Mihai", "Alexandru", "Cătălin", "Răzvan", "Bogdan", "Gheorghe",
	"Ionuț", "Sorin", "Adrian", "Florin", "Vlad", "Dragoș", "Tudor", "Costel", "Marius",
	"Radu", "Ovidiu", "Paul", "Silviu", "Cristian", "Daniel", "Lucian", "Mircea", "Horia",
	"Petru", "Nicolae", "Iulian", "Virgil", "Toma", "Aurelian",
}

var firstNamesFemale = []string{
	"Ioana", "Andreea", "Elena", "Irina", "Ana-Maria", "Oana", "Cristina", "Mădălina",
	"Diana", "Raluca", "Alina", "Laura", "Simona", "Georgiana", "Bianca", "Roxana",
	"Luminița", "Carmen", "Anca", "Nicoleta", "Ramona", "Corina", "Teodora", "Denisa",
	"Iulia", "Ilinca", "Smaranda", "Mioara", "Sânziana", "Ruxandra", "Ecaterina", "Viorica",
}

var lastNames = []string{
	"Popescu", "Ionescu", "Mărgărit", "Dumitrescu", "Stănescu", "Constantinescu", "Georgescu",
	"Rădulescu", "Munteanu", "Țurcanu", "Șerban", "Vasilescu", "Stoica", "Matei", "Ciobanu",
	"Lungu", "Neagu", "Bălan", "Dobre", "Ene", "Moldovan", "Pîrvu", "Tănase", "Chiriță",
	"Căpraru", "Iordache", "Nistor", "Sârbu", "Florea", "Cozma", "Oprea", "Păun", "Mocanu",
	"Niculescu", "Bărbulescu", "Toma", "Manole", "Zamfir", "Ghiță", "Dinu", "Răducanu",
	"Pașcu", "Roșu", "Crăciun", "Voicu", "Anghel", "Sandu", "Costache", "Husar", "Vlădescu",
}

var brandNames = []string{
	"Cofetăria Dulce Ispită", "Țara Gustului", "Vinăria Dealu Mare", "Brutăria Spicul de Aur",
	"Clinica Zâmbet Curat", "Atelierul de Mobilă Stejar", "Băneasa Residence", "Carpați Outdoor",
	"Moara Veche", "Sănătatea Familiei", "Librăria Pagina Albă", "Croitoria Ștefania",
	"Transilvania Bio", "Dunărea Logistic", "Fierăria Ciocanul", "Grădina cu Flori",
	"Școala de Dans Ritm", "Hotel Cetate", "Pensiunea Vânătorul", "Apicola Mierea Bunicii",
	"Lactate Poiana", "Auto Șoseaua Nordului", "Farmacia Salvia", "Cafeneaua Boema",
	"Tehnic Solar", "Imobiliare Lacul Tei", "Vila Rozelor", "Ceramica de Horezu",
	"Textila Mureș", "Agrotech Bărăgan", "Panificația Dobrogea", "Delta Turism",
	"Ceai & Poveste", `Brutăria "La Cuptor"`, "Optica Vedere Clară", "Dental Art Iași",
	"Energia Verde", "Fitness Titan", "Covrigăria Tradiției", "Galeria Artă Nouă",
	"Bistro Piața Sfatului", "Mobila Făget", "Ciocolateria Amăruie", "Orizont Travel",
	"Glob Assist Asigurări", "Ferma Valea Ialomiței", "Cramele Cotnari Noi", "Tipografia Litera",
}

var projectKinds = []string{
	"Campanie de primăvară", "Rebranding", "Site de prezentare", "Lansare produs",
	"Campanie Black Friday", "Strategie social media", "Identitate vizuală", "Campanie radio",
	"Catalog de produse", "Eveniment aniversar", "Newsletter lunar", "Campanie de Crăciun",
	"Optimizare SEO", "Aplicație mobilă", "Ambalaj nou", "Campanie de recrutare",
	"Ședință foto", "Spot TV", "Broșură corporate", "Materiale POS",
}

var teamRoles = []string{
	"manager de proiect", "director de creație", "designer", "copywriter",
	"specialist social media", "dezvoltator web", "account manager", "fotograf",
}

var deliverableNames = []string{
	"Logo final", "Manual de brand", "Machete social media", "Site de prezentare",
	"Spot radio 30s", "Plan media", "Raport de campanie", "Fotografii produs", "Texte site",
	"Newsletter", "Bannere online", "Afiș A2", "Video 15s", "Strategie de comunicare",
}

var contactPositions = []string{
	"Director general", "Director de marketing", "Manager de brand", "Specialist achiziții",
	"Asistent manager", "Director financiar", "Responsabil comunicare",
}

var payees = []string{
	"Tipografia Alfa SRL", "Studio Foto Lumină SRL", "Media Buying Expert SRL",
	"Ș. Pîrvu PFA", "Producții Video Cadru SRL", "Print Express SRL", "Google Ireland Ltd.",
	"Meta Platforms Ireland Ltd.", "Studio Sunet Ecou SRL", "Traduceri Babel PFA",
	"Hosting Rapid SRL", "Fotograf I. Mărgărit PFA",
}

var cities = []struct{ city, county string }{
	{"București", "București"}, {"Cluj-Napoca", "Cluj"}, {"Iași", "Iași"}, {"Timișoara", "Timiș"},
	{"Brașov", "Brașov"}, {"Constanța", "Constanța"}, {"Craiova", "Dolj"}, {"Sibiu", "Sibiu"},
	{"Oradea", "Bihor"}, {"Târgu Mureș", "Mureș"}, {"Ploiești", "Prahova"}, {"Galați", "Galați"},
	{"Suceava", "Suceava"}, {"Pitești", "Argeș"},
}

var streets = []string{
	"Str. Ștefan cel Mare", "Bd. Unirii", "Calea Victoriei", "Str. Mihai Eminescu",
	"Bd. Revoluției", "Str. Avram Iancu", "Șos. Kiseleff", "Str. Horea", "Str. Păcii",
}

var industries = []string{
	"alimentație", "imobiliare", "turism", "sănătate", "retail", "producție", "educație",
	"energie", "auto", "HoReCa",
}

var brandTags = []string{"retainer", "proiect", "prioritar", "nou", "B2B", "B2C", "național", "local"}

var months = []string{
	"ianuarie", "februarie", "martie", "aprilie", "mai", "iunie", "iulie", "august",
	"septembrie", "octombrie", "noiembrie", "decembrie",
}

// Subject templates: {b} brand name, {p} project name, {m} month, {n} a number.
var brandSubjects = []string{
	"Ofertă {b} – {p}", "Propunere creativă pentru {p}", "Întâlnire de status {p} – joi",
	`Feedback machete "{p}"`, "Raport lunar {m} – {b}", "Contract semnat {b}",
	"Briefing campanie {p}", "Aprobare buget {p}", "Factura nr. AG-{n} – {b}",
	"Materiale pentru ședința de mâine", "Întrebare rapidă despre {p}",
	`Fișiere pe \\server\proiecte\{b}`, "Calendar postări {m} 📅", "Modificări text {p}",
}

var plainSubjects = []string{
	"Întâlnire internă", "Concediu {m}", "Newsletter agenție – {m}",
	"Invitație: Teambuilding Sinaia", "Resetare parolă cont", "Actualizare politici interne",
	"Program sărbători 🎄", "Pontaj {m}", "Ședință săptămânală", "Întrebare rapidă",
}

var messageSentences = []string{
	"Vă trimit atașat materialele discutate la ultima întâlnire.",
	"Vă rog să îmi confirmați dacă varianta finală este în regulă.",
	"Am actualizat calendarul cu noile termene de livrare.",
	"Clientul a cerut câteva modificări la paleta de culori.",
	"Putem programa o discuție scurtă mâine dimineață?",
	"Bugetul pentru luna viitoare a fost aprobat.",
	"Revin cu detalii după ședința de joi.",
	"Mulțumesc pentru feedback, am integrat toate observațiile.",
	"Factura a fost emisă și trimisă către departamentul financiar.",
	"Textele pentru site sunt gata pentru corectură.",
	"Vă rog să verificați și secțiunea „Despre noi”.",
	"Fotografiile de produs vor fi gata până vineri.",
}

// asciiFold lower-cases s and replaces Romanian diacritics, for addresses.
func asciiFold(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch r {
		case 'ă', 'â':
			b.WriteByte('a')
		case 'î':
			b.WriteByte('i')
		case 'ș', 'ş':
			b.WriteByte('s')
		case 'ț', 'ţ':
			b.WriteByte('t')
		case ' ', '-', '_', '.':
			b.WriteByte('-')
		default:
			if r < 128 && (r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
				b.WriteRune(r)
			}
		}
	}
	return strings.Trim(b.String(), "-")
}
